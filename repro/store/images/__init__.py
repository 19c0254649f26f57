"""Images: the harness image and engine images, tagged by content key, built offline-capable.

Every image repro builds comes from a Dockerfile in images/ whose base is a build argument. Its
tag is `repro/<name>:<key16>` where the key is the sha256 over everything the image is made of:

    the Dockerfile's bytes, the build arguments (base references, source sha256, stamped build),
    the input hashes (engine source sha256; harness tree digest and wheel lock hash) and the
    image id of every base it builds on.

So an unchanged set of inputs is a no-op (the tag exists: "up to date") and a changed input can
never hide behind an old tag. The key is computed without fetching anything: sources are named by
their pinned sha256, wheels by the hash of the lock file; both are fetched, verified and cached
only when a build actually runs. Engines pinned by digest (`image:` in the matrix) are resolved
locally and never pulled.

The package, by job: `keys` (what an image is made of: references, plans, the harness tree
digest, the content key), `bases` (the bases builds start from, resolved locally), `wheels` (the
harness image's wheels and their lock), `build` (the context and `docker build` with its log),
`plans` (how each image is built and what a matrix needs), `resolve` (the images a run uses).
Others import from the package: `ImageRef`, `harness_image`, `engine_image`, `base_image_id` and
`harness_source_digest` for a run and its records; `needed_images`, `build_plan_*` and the build
helpers for the CLI and the external suites' images.
"""

from repro.store.images import bases, build, keys, plans, resolve, wheels
from repro.store.images.bases import (
    CUDA_BASES_ENV,
    base_image_id,
    client_or_default,
    configured_base,
    cuda_architectures,
    find_local,
    resolve_base,
    variant_bases,
)
from repro.store.images.build import BuildLog, build_image, build_in_context, build_log_path, docker_build, link_or_copy
from repro.store.images.keys import (
    BUILD_TIMEOUT_S,
    HARNESS_DIR,
    HARNESS_DOCKERFILE,
    HARNESS_LOCK,
    KEY_SCHEMA,
    LOG_TAIL_LINES,
    REPOSITORY,
    Blocked,
    BuildPlan,
    DigestPin,
    ImageRef,
    Log,
    content_key,
    dockerfile_args,
    harness_source_digest,
    image_key,
    quiet,
    ref_for_plan,
    tree_files,
)
from repro.store.images.plans import build_plan_engine, build_plan_harness, engine_image_name, needed_images
from repro.store.images.resolve import engine_image, harness_image, resolve_digest, resolve_plan
from repro.store.images.wheels import (
    WHEEL_IMPLEMENTATION,
    WHEEL_PLATFORM,
    WHEEL_PYTHON,
    WHEEL_TARGET,
    base_dependencies,
    build_repro_wheel,
    download_locked,
    harness_wheels,
    lock_harness_requirements,
    pip_argv,
    run_tool,
)

__all__ = [
    "BUILD_TIMEOUT_S",
    "Blocked",
    "BuildLog",
    "BuildPlan",
    "CUDA_BASES_ENV",
    "DigestPin",
    "HARNESS_DIR",
    "HARNESS_DOCKERFILE",
    "HARNESS_LOCK",
    "ImageRef",
    "KEY_SCHEMA",
    "LOG_TAIL_LINES",
    "Log",
    "REPOSITORY",
    "WHEEL_IMPLEMENTATION",
    "WHEEL_PLATFORM",
    "WHEEL_PYTHON",
    "WHEEL_TARGET",
    "base_dependencies",
    "base_image_id",
    "build_image",
    "build_in_context",
    "build_log_path",
    "build_plan_engine",
    "build_plan_harness",
    "build_repro_wheel",
    "client_or_default",
    "configured_base",
    "content_key",
    "cuda_architectures",
    "docker_build",
    "dockerfile_args",
    "engine_image",
    "engine_image_name",
    "find_local",
    "harness_image",
    "harness_source_digest",
    "harness_wheels",
    "image_key",
    "link_or_copy",
    "lock_harness_requirements",
    "needed_images",
    "pip_argv",
    "download_locked",
    "quiet",
    "ref_for_plan",
    "resolve_base",
    "resolve_digest",
    "resolve_plan",
    "run_tool",
    "tree_files",
    "variant_bases",
    "bases",
    "build",
    "keys",
    "plans",
    "resolve",
    "wheels",
]
