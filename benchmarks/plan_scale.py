"""Time `repro matrix plan` on matrices of many models that all name one GGUF file.

    python benchmarks/plan_scale.py [--sizes 100,500,2500] [--model qwen2.5-coder-0.5b-instruct-q4_k_m]

Prints figures (this is a benchmark, not a timed test): for each size, a matrix of that many
models, each the smoke matrix's model under an id of its own and the same sha256 (so the same
stored file; one short source each, which planning never reads), one engine, one protocol and one
suite, is written to a scratch folder and planned on the `cpu` profile by the `repro` command in a
child process: the wall time of the whole plan (printing every cell included), seconds per model,
and the wall time of the same plan piped into `head -1` (which must end at once: the command stops
quietly at the closed pipe). Needs the model in the store (`repro models fetch matrix/smoke.yaml`):
without it the plan reads no header at all.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repro.spec.loading import load_matrix  # noqa: E402
from repro.store.models import is_stored  # noqa: E402

SMOKE = ROOT / "matrix" / "smoke.yaml"


def scale_matrix(count: int, model_id: str) -> dict:
    """The smoke matrix with `count` copies of one model (ids model-00001...), one protocol, one suite."""
    raw = yaml.safe_load(SMOKE.read_text())
    (model,) = [m for m in raw["models"] if m["id"] == model_id]
    source = [{"path": f"models/{model_id}.gguf"}]  # never fetched: the plan reads the stored copy by sha256
    models = [{**model, "id": f"{model_id}-{number:05d}", "sources": source} for number in range(1, count + 1)]
    return {
        **raw,
        "name": f"plan-scale-{count}",
        "models": models,
        "protocols": ["json_schema"],
        "suites": raw["suites"][:1],
        "exclude": [],
    }


def timed(command: str) -> float:
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{command}: exit {done.returncode}: {done.stderr.strip()[:300]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,500,2500")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct-q4_k_m")
    arguments = parser.parse_args()
    (spec,) = [m for m in load_matrix(SMOKE).matrix.models if m.id == arguments.model]
    if not is_stored(spec):
        raise SystemExit(f"model {spec.id} is not in the store: run repro models fetch {SMOKE.relative_to(ROOT)}")
    repro = Path(sys.executable).with_name("repro")
    print("models  plan (s)  per model (ms)  plan | head -1 (s)")
    with tempfile.TemporaryDirectory(prefix="repro-plan-scale-") as scratch:
        for count in (int(size) for size in arguments.sizes.split(",")):
            path = Path(scratch) / f"scale-{count}.yaml"
            path.write_text(yaml.safe_dump(scale_matrix(count, arguments.model), sort_keys=False))
            whole = timed(f"{repro} matrix plan {path} --profile cpu > /dev/null")
            head = timed(f"{repro} matrix plan {path} --profile cpu | head -1 > /dev/null")
            print(f"{count:6d}  {whole:8.2f}  {whole / count * 1000:14.2f}  {head:18.2f}", flush=True)


if __name__ == "__main__":
    main()
