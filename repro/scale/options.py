"""The options of `repro scale` and the job description its files are rendered from, each value
checked against a strict pattern before anything is written (repro.scale.jobs renders, repro.scale.k8s
builds the manifests)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from repro.core.errors import BadInput
from repro.core.terminal import printable

# Every value written into a job file matches one of these before anything is rendered: a newline
# in --time would add an #SBATCH directive, `$(...)` in a path would run when the task starts.
SAFE_PATH = re.compile(r"^[A-Za-z0-9._/+@,=~-]{1,1024}$")  # no spaces, quotes, `$`, control characters


SLURM_NAME = r"^[A-Za-z0-9._-]{1,64}(,[A-Za-z0-9._-]{1,64}){0,15}$"  # a partition, or several


SLURM_TIME = r"^([0-9]{1,6}(-[0-9]{1,2})?(:[0-9]{1,2}){0,2}|UNLIMITED|infinite)$"  # minutes, [D-]HH:MM:SS


DNS_LABEL = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"  # a Kubernetes namespace or claim name


IMAGE_REF = r"^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$"


COMMAND_WORDS = r"^[A-Za-z0-9._/+=-]{1,256}( [A-Za-z0-9._/+=-]{1,256}){0,7}$"  # `repro`, `python3 -m repro`


def safe_path(value: Path) -> Path:
    if not SAFE_PATH.match(str(value)):
        raise ValueError("a path written into job files may hold only letters, digits and . _ / + @ , = ~ -")
    return value


SafePath = Annotated[Path, AfterValidator(safe_path)]


Options = TypeVar("Options", bound="ScaleOptions")


class Resources(BaseModel):
    """What one shard asks the scheduler for, from the profile."""

    cpus: int
    memory_gb: int
    gpus: int


class ScaleOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    matrix: SafePath
    profile: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,127}$")
    shards: int = Field(ge=1, le=100_000)
    out: Path  # where the generated files go
    results: SafePath  # the shared results folder the shards write into
    workdir: SafePath  # the project checkout the jobs run from
    repro: str = Field(default="repro", pattern=COMMAND_WORDS)  # how the jobs call repro
    prepare: bool = True  # bootstrap, build and fetch (no-ops when present) before each shard runs
    mem_gb: int | None = Field(default=None, ge=1, le=100_000)  # override the profile's memory


class SlurmOptions(ScaleOptions):
    partition: str | None = Field(default=None, pattern=SLURM_NAME)
    time: str | None = Field(default=None, pattern=SLURM_TIME)
    parallel: int | None = Field(default=None, ge=1, le=100_000)  # at most this many array tasks at once


class K8sOptions(ScaleOptions):
    image: str = Field(pattern=IMAGE_REF)
    pvc: str = Field(default="repro-results", pattern=DNS_LABEL)
    engine: Literal["dind", "socket"] = "dind"
    dind_image: str = Field(default="docker:27-dind", pattern=IMAGE_REF)
    namespace: str | None = Field(default=None, pattern=DNS_LABEL)
    parallel: int | None = Field(default=None, ge=1, le=100_000)


def scale_options(model: type[Options], **values: object) -> Options:
    """The options, checked against the patterns above; the first bad one is one BadInput line
    naming its flag (`--time 1:00\\n#SBATCH ...: ...`)."""
    try:
        return model(**values)
    except ValidationError as error:
        first = error.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else "option"
        reason = (
            first["msg"].removeprefix("Value error, ").replace("String should match pattern", "expected the pattern")
        )
        flag = "MATRIX" if name == "matrix" else f"--{name.replace('_', '-')}"  # the one positional argument
        raise BadInput(f"{flag} {printable(values.get(name))[:80]}: {reason}") from None


class ScaleJob(BaseModel):
    """What the templates are rendered from."""

    version: str
    name: str
    matrix: str
    matrix_name: str
    profile: str
    shards: int
    cells: int
    results: str
    workdir: str
    repro: str
    prepare: bool
    resources: Resources
