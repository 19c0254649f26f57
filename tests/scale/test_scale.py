"""`repro scale slurm | k8s` without a scheduler: the scripts' content and shell syntax, the
Indexed Job validated against the Kubernetes JSON schema, bad input as one line and exit 2."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from repro.__main__ import main
from repro.core.config import PROJECT_ROOT
from repro.scale.k8s import K8S_VERSION

MATRIX = Path(__file__).parent / "matrix.yaml"
MATRIX_ARG = "tests/scale/matrix.yaml"


def generate(kind: str, out: Path, *args: str, profile: str = "cpu", shards: int = 2) -> dict[str, str]:
    code = main(["scale", kind, str(MATRIX), "--profile", profile, "--shards", str(shards), "--out", str(out), *args])
    assert code in (0, None)
    return {path.name: path.read_text() for path in out.iterdir()}


def bash_syntax(text: str) -> None:
    proc = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------- the test matrix


def test_scale_matrix_pins_the_smoke_models_and_engine():
    smoke = yaml.safe_load((PROJECT_ROOT / "matrix" / "smoke.yaml").read_text())
    scale = yaml.safe_load(MATRIX.read_text())
    assert scale["engines"] == smoke["engines"]
    assert scale["models"] == [m for m in smoke["models"] if m["id"] == "smollm2-135m-instruct-q4_1"]


# ---------------------------------------------------------------- Slurm


def test_slurm_array_asks_for_the_profile(tmp_path):
    files = generate("slurm", tmp_path / "jobs", "--results", str(tmp_path / "shared"), profile="gpu-t4")
    shards = files["shards.sbatch"]
    for line in ("#SBATCH --array=1-2", "#SBATCH --cpus-per-task=4", "#SBATCH --mem=16G", "#SBATCH --gpus=1"):
        assert line + "\n" in shards, line
    assert f'repro matrix run {MATRIX_ARG} --profile gpu-t4 --shard "${{shard}}"' in shards
    assert 'shard="${SLURM_ARRAY_TASK_ID}/2"' in shards
    assert f"--out {tmp_path / 'shared'}/shard-" in shards and "--resume" in shards
    assert f"#SBATCH --chdir={PROJECT_ROOT}" in shards


def test_slurm_cpu_profile_asks_for_no_gpu(tmp_path):
    files = generate("slurm", tmp_path / "jobs", "--parallel", "1", "--partition", "batch", "--time", "02:00:00")
    shards = files["shards.sbatch"]
    assert "--gpus" not in shards
    for line in (
        "#SBATCH --array=1-2%1",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --mem=8G",
        "#SBATCH --partition=batch",
        "#SBATCH --time=02:00:00",
    ):
        assert line + "\n" in shards, line


def test_slurm_merge_job_merges_checks_and_renders(tmp_path):
    files = generate(
        "slurm", tmp_path / "jobs", "--results", str(tmp_path / "shared"), "--repro", "/opt/venv/bin/repro"
    )
    merge = files["merge.sbatch"]
    assert "for i in $(seq 1 2)" in merge and "shard-${i}/LATEST" in merge
    assert '/opt/venv/bin/repro results merge "${runs[@]}" --out "${results}/merged"' in merge
    assert '/opt/venv/bin/repro check "${results}/merged"' in merge
    assert '/opt/venv/bin/repro paper render "${results}/merged" --out "${results}/tables"' in merge
    submit = files["submit.sh"]
    assert 'sbatch --parsable "$@" "${here}/shards.sbatch"' in submit
    assert '--dependency=afterok:"${array}" --kill-on-invalid-dep=yes "${here}/merge.sbatch"' in submit
    assert (tmp_path / "jobs" / "submit.sh").stat().st_mode & stat.S_IXUSR


def test_slurm_scripts_are_valid_bash(tmp_path):
    for text in generate("slurm", tmp_path / "jobs", profile="gpu-h100", shards=1).values():
        bash_syntax(text)


def test_slurm_no_prepare_runs_only_the_shard(tmp_path):
    shards = generate("slurm", tmp_path / "jobs", "--no-prepare")["shards.sbatch"]
    assert "images build" not in shards and "models fetch" not in shards and "matrix run" in shards


# ---------------------------------------------------------------- Kubernetes


def k8s_validate(document: dict) -> None:
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate", reason="pip install 'repro[test]' (kubernetes-validate)"
    )
    assert kubernetes_validate.validate(document, K8S_VERSION, strict=True) == K8S_VERSION


def pod_of(job: dict) -> dict:
    return job["spec"]["template"]["spec"]


@pytest.mark.parametrize("engine", ["dind", "socket"])
@pytest.mark.parametrize("profile", ["cpu", "gpu-t4"])
def test_k8s_jobs_validate_against_the_schema(tmp_path, engine, profile):
    files = generate("k8s", tmp_path / "k8s", "--engine", engine, "--pvc", "shared-results", profile=profile)
    for name in ("job.yaml", "merge-job.yaml"):
        k8s_validate(yaml.safe_load(files[name]))
    bash_syntax(files["submit.sh"])


def test_k8s_indexed_job_runs_one_shard_per_index(tmp_path):
    files = generate("k8s", tmp_path / "k8s", "--parallel", "1", profile="gpu-t4", shards=2)
    job = yaml.safe_load(files["job.yaml"])
    assert job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["completions"] == 2 and job["spec"]["parallelism"] == 1
    shard = pod_of(job)["containers"][0]
    script = shard["args"][0]
    bash_syntax(script)
    assert "i=$((JOB_COMPLETION_INDEX+1))" in script and 'shard="${i}/2"' in script
    assert (
        f'python3 -m repro matrix run {MATRIX_ARG} --profile gpu-t4 --shard "${{shard}}" --out /results/shard-"${{i}}"'
        in script
    )
    assert {"name": "results", "persistentVolumeClaim": {"claimName": "repro-results"}} in pod_of(job)["volumes"]


def test_k8s_dind_sidecar_holds_the_profile_resources(tmp_path):
    job = yaml.safe_load(generate("k8s", tmp_path / "k8s", profile="gpu-t4")["job.yaml"])
    dind = pod_of(job)["initContainers"][0]
    assert dind["restartPolicy"] == "Always" and dind["securityContext"]["privileged"] is True
    assert dind["resources"]["limits"] == {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}
    shard = pod_of(job)["containers"][0]
    assert {"name": "DOCKER_HOST", "value": "unix:///var/run/dind/docker.sock"} in shard["env"]
    work = {m["name"]: m["mountPath"] for m in dind["volumeMounts"]}["work"]
    assert {m["name"]: m["mountPath"] for m in shard["volumeMounts"]}["work"] == work


def test_k8s_socket_mounts_the_node_socket(tmp_path):
    job = yaml.safe_load(generate("k8s", tmp_path / "k8s", "--engine", "socket", profile="gpu-t4")["job.yaml"])
    pod = pod_of(job)
    assert "initContainers" not in pod
    assert {"name": "docker-socket", "hostPath": {"path": "/var/run/docker.sock", "type": "Socket"}} in pod["volumes"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"


def test_k8s_schema_catches_a_broken_job(tmp_path):
    job = yaml.safe_load(generate("k8s", tmp_path / "k8s")["job.yaml"])
    job["spec"]["completions"] = "two"
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, K8S_VERSION, strict=True)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["slurm", str(MATRIX), "--profile", "cpu", "--shards", "0"], "--shards 0"),
        (["slurm", str(MATRIX), "--profile", "cpu", "--shards", "3"], "2 runnable cells"),
        (["slurm", str(MATRIX), "--profile", "tpu", "--shards", "2"], "unknown profile 'tpu'"),
        (["k8s", str(MATRIX), "--profile", "cpu", "--shards", "2", "--engine", "podman"], "--engine podman"),
        (["k8s", "no/such/matrix.yaml", "--profile", "cpu", "--shards", "2"], "no/such/matrix.yaml"),
        # issue 27: option values are checked before they reach a job file (no directive, key or command injected)
        (
            ["slurm", str(MATRIX), "--profile", "cpu", "--shards", "2", "--time", "1:00\n#SBATCH --uid=0"],
            "--time 1:00\\n#SBATCH",
        ),
        (["slurm", str(MATRIX), "--profile", "cpu", "--shards", "2", "--partition", "a b"], "--partition a b"),
        (["slurm", "$(touch pwned).yaml", "--profile", "cpu", "--shards", "2"], "MATRIX $(touch pwned).yaml"),
        (["slurm", str(MATRIX), "--profile", "cpu", "--shards", "2", "--workdir", "/x;reboot"], "--workdir /x;reboot"),
        (
            ["slurm", str(MATRIX), "--profile", "cpu", "--shards", "2", "--repro", "repro; rm -rf /"],
            "--repro repro; rm -rf /",
        ),
        (["slurm", str(MATRIX), "--profile", "cpu", "--shards", "2", "--parallel", "-1"], "--parallel -1"),
        (["slurm", str(MATRIX), "--profile", "cpu", "--shards", "2", "--mem-gb", "0"], "--mem-gb 0"),
        (
            ["k8s", str(MATRIX), "--profile", "cpu", "--shards", "2", "--namespace", "a\nkind: Pod"],
            "--namespace a\\nkind: Pod",
        ),
        (["k8s", str(MATRIX), "--profile", "cpu", "--shards", "2", "--image", 'x"\nhostPID: true'], "--image"),
        (["k8s", str(MATRIX), "--profile", "cpu", "--shards", "2", "--pvc", "Bad_Claim"], "--pvc Bad_Claim"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    assert main(["scale", *args, "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert message in captured.err + captured.out and "Traceback" not in captured.err
    assert not (tmp_path / "out").exists()


def test_k8s_manifests_are_serialized_so_no_value_adds_a_key(tmp_path):
    """The manifests are data written by a YAML serializer: a value holding a newline and a key
    (here the matrix's free-text name, which no pattern restricts) stays one string."""
    from repro.scale.k8s import merge_job, shard_job
    from repro.scale.options import K8sOptions, Resources, ScaleJob

    hostile = 'smoke"\nhostPID: true\n---\nkind: Pod'
    job = ScaleJob(
        version="0",
        name="repro-smoke-cpu",
        matrix="matrix/smoke.yaml",
        matrix_name=hostile,
        profile="cpu",
        shards=2,
        cells=4,
        results="/results",
        workdir="/srv/repro",
        repro="repro",
        prepare=False,
        resources=Resources(cpus=2, memory_gb=4, gpus=0),
    )
    options = K8sOptions(
        matrix=MATRIX,
        profile="cpu",
        shards=2,
        out=tmp_path,
        results=Path("/results"),
        workdir=Path("/srv/repro"),
        image="repro:1",
    )
    for text in (shard_job(options, job), merge_job(options, job)):
        documents = list(yaml.safe_load_all(text))
        assert len(documents) == 1 and documents[0]["metadata"]["labels"]["repro.matrix"] == hostile
        assert "hostPID" not in pod_of(documents[0])
