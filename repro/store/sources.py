"""Engine sources, fetched on the host and kept by sha256.

An `EngineSource` (repro.spec.matrix) names one archive and its sha256:

- `pypi: name==version`: the sdist of that release, found through the package index's Simple API
  (PEP 691 JSON, else the PEP 503 HTML page). `pip download --no-binary :all:` is not used: it
  prepares the sdist's metadata, which builds its build requirements from source.
- `git: {url, commit}`: a clone checked out at the full commit, then `git archive --format=tar`
  of that commit (uncompressed: git's tar output is stable across git versions, its gzip is not).
- `archive: PATH`: a local tar archive (relative paths are taken from the project root).

A **mirror** is a local folder of archives found by their sha256 alone, whatever their names
(`REPRO_SOURCE_MIRROR`, several folders separated by `:`; `repro suites fetch --mirror DIR` sets
it): a source not in the cache is taken from a mirror before anything is downloaded, and an
`archive` that is not in the project is looked up there. Tests and CI fill the cache this way
offline; the bytes are verified against the pin as any download is.

Whatever the kind, the bytes must hash to the pinned sha256 or `ReproError` names both hashes
and the source; nothing unverified enters the cache. The cache is
`<cache_dir()>/sources/sha256/<hex>.<ext>`, so a pinned source is fetched once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin

from repro.core.config import PROJECT_ROOT, cache_dir
from repro.core.errors import BadInput, ReproError
from repro.core.files import sha256_file
from repro.spec.matrix import EngineSource

DEFAULT_INDEX = "https://pypi.org/simple"
# Formats `tar -xf` in the build stage unpacks without extra tools (gzip is in every Debian base).
ARCHIVE_EXTENSIONS = (".tar.gz", ".tgz", ".tar")
_OTHER_TAR = (".tar.xz", ".txz", ".tar.bz2", ".tbz2", ".tar.zst")
_CHUNK = 1 << 20
MIRROR_ENV = "REPRO_SOURCE_MIRROR"
MAX_MIRROR_FILES = 10_000  # files looked at per mirror folder (a mirror is a small local folder)
MAX_MIRROR_BYTES = 2 * 1024**3  # a file larger than this is not hashed

Log = Callable[[str], None]


def sources_dir() -> Path:
    return cache_dir() / "sources" / "sha256"


def archive_extension(name: str) -> str:
    lowered = name.lower()
    for ext in ARCHIVE_EXTENSIONS + _OTHER_TAR:
        if lowered.endswith(ext):
            return ext
    raise BadInput(f"'{name}' is not a tar archive (.tar.gz, .tgz, .tar, .tar.xz, .tar.bz2, .tar.zst)")


def cached_source(sha256: str) -> Path | None:
    """The cached archive for a pinned sha256, if any (its name carries the extension)."""
    folder = sources_dir()
    if not folder.is_dir():
        return None
    return next((p for p in sorted(folder.glob(f"{sha256}.*")) if not p.name.endswith(".partial")), None)


def fetch_source(source: EngineSource, *, log: Log = lambda line: None, verify_cached: bool = True) -> Path:
    """The verified archive of `source` in the cache, fetching it on first use."""
    cached = cached_source(source.sha256)
    if cached is not None:
        if not verify_cached:
            return cached
        actual = sha256_file(cached)
        if actual == source.sha256:
            return cached
        log(f"cached {cached.name} hashes to {actual}; fetching again")
        cached.unlink()
    sources_dir().mkdir(parents=True, exist_ok=True)
    work_parent = cache_dir() / "tmp"
    work_parent.mkdir(parents=True, exist_ok=True)
    local = _project_archive(source.archive) if source.archive else None
    mirrored = None if local is not None else from_mirror(source.sha256, log)
    if local is not None or mirrored is not None:
        return admit(local or mirrored or Path(), source, copy=True)
    with tempfile.TemporaryDirectory(prefix="source-", dir=work_parent) as work:
        if source.pypi:
            fetched = _fetch_pypi_sdist(source.pypi, Path(work), log)
        elif source.git:
            fetched = _fetch_git(source.git.url, source.git.commit, Path(work), log)
        else:
            raise BadInput(
                f"source archive {source.archive} not found in the project, "
                f"nor by its sha256 in a mirror ({MIRROR_ENV})"
            )
        return admit(fetched, source)


def admit(path: Path, source: EngineSource, copy: bool = False) -> Path:
    """Check the bytes against the pin, then move (or copy) them into the cache."""
    actual = sha256_file(path)
    if actual != source.sha256:
        raise ReproError(f"source {source.describe()} sha256 mismatch: expected {source.sha256}, got {actual}")
    target = sources_dir() / f"{source.sha256}{archive_extension(path.name)}"
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    if copy:
        shutil.copyfile(path, partial)
    else:
        shutil.move(str(path), partial)
    os.replace(partial, target)
    return target


# ---------------------------------------------------------------- pypi


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _fetch_pypi_sdist(requirement: str, work: Path, log: Log) -> Path:
    import httpx

    name, _, version = requirement.partition("==")
    index = os.environ.get("REPRO_PYPI_INDEX", DEFAULT_INDEX).rstrip("/")
    page = f"{index}/{_normalize(name)}/"
    files = _simple_index_files(page)
    wanted = _normalize(f"{name}-{version}")
    sdists = [f for f in files if (stem := _sdist_stem(f["filename"])) is not None and _normalize(stem) == wanted]
    if not sdists:
        zips = [
            f["filename"] for f in files if f["filename"].endswith(".zip") and _normalize(f["filename"][:-4]) == wanted
        ]
        why = f"only a zip sdist ({zips[0]})" if zips else "no sdist"
        raise ReproError(f"source pypi:{requirement}: {why} for {name} {version} on {page}")
    chosen = sdists[0]
    log(f"downloading {chosen['filename']} from {index}")
    target = work / chosen["filename"]
    with httpx.stream("GET", chosen["url"], follow_redirects=True, timeout=httpx.Timeout(60.0, read=300.0)) as response:
        if response.status_code != 200:
            raise ReproError(f"source pypi:{requirement}: HTTP {response.status_code} for {chosen['url']}")
        with open(target, "wb") as handle:
            for block in response.iter_bytes(_CHUNK):
                handle.write(block)
    return target


def _sdist_stem(filename: str) -> str | None:
    lowered = filename.lower()
    for ext in ARCHIVE_EXTENSIONS + _OTHER_TAR:
        if lowered.endswith(ext):
            return filename[: -len(ext)]
    return None


def _simple_index_files(page: str) -> list[dict]:
    """[{filename, url}] from a Simple API project page (JSON if offered, else HTML)."""
    import httpx

    headers = {"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"}
    try:
        response = httpx.get(page, headers=headers, follow_redirects=True, timeout=60.0)
    except httpx.HTTPError as error:
        raise ReproError(f"package index not reachable at {page}: {error}") from None
    if response.status_code == 404:
        raise ReproError(f"package index has no project at {page}")
    if response.status_code != 200:
        raise ReproError(f"package index answered HTTP {response.status_code} for {page}")
    if "json" in response.headers.get("content-type", ""):
        data = response.json()
        return [{"filename": f["filename"], "url": urljoin(page, f["url"])} for f in data.get("files", [])]
    parser = _Links()
    parser.feed(response.text)
    files = []
    for href, text in parser.links:
        url, _ = urldefrag(urljoin(page, href))
        files.append({"filename": text.strip() or url.rsplit("/", 1)[-1], "url": url})
    return files


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")
            self._text = ""

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.links.append((self._href, self._text))
            self._href = None


# ---------------------------------------------------------------- git


def _fetch_git(url: str, commit: str, work: Path, log: Log) -> Path:
    try:
        import git
    except ImportError:
        raise ReproError("a git source needs GitPython: pip install 'repro[host]'") from None
    log(f"cloning {url} at {commit}")
    checkout = work / "checkout"
    try:
        repo = git.Repo.clone_from(url, checkout, no_checkout=True)
        repo.git.checkout(commit)
        resolved = repo.head.commit.hexsha
    except git.GitCommandError as error:
        detail = (error.stderr or str(error)).strip().splitlines()
        raise ReproError(f"source git:{url}@{commit}: {detail[-1] if detail else 'git failed'}") from None
    if resolved != commit:
        raise ReproError(f"source git:{url}@{commit}: checkout resolved to {resolved}")
    target = work / f"{commit}.tar"
    with open(target, "wb") as handle:
        subprocess.run(["git", "-C", str(checkout), "archive", "--format=tar", commit], stdout=handle, check=True)
    return target


# ---------------------------------------------------------------- local and mirrored


def _project_archive(path: str) -> Path | None:
    """A local archive named by the matrix, when it exists (relative to the project root)."""
    candidate = Path(path).expanduser()
    if not candidate.is_absolute():
        candidate = PROJECT_ROOT / candidate
    archive_extension(candidate.name)
    return candidate if candidate.is_file() else None


def mirror_dirs() -> list[Path]:
    """The mirror folders named by REPRO_SOURCE_MIRROR (those that exist)."""
    return [
        Path(part).expanduser()
        for part in os.environ.get(MIRROR_ENV, "").split(os.pathsep)
        if part.strip() and Path(part).expanduser().is_dir()
    ]


def from_mirror(sha256: str, log: Log = lambda line: None) -> Path | None:
    """The first tar archive in a mirror whose bytes hash to `sha256` (links are not followed;
    at most MAX_MIRROR_FILES files per mirror are looked at)."""
    for mirror in mirror_dirs():
        for path in _mirror_archives(mirror):
            if sha256_file(path) == sha256:
                log(f"source {sha256[:12]} found in the mirror as {path.name}")
                return path
    return None


def _mirror_archives(mirror: Path) -> list[Path]:
    found: list[Path] = []
    for folder, dirs, names in os.walk(mirror, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            path = Path(folder) / name
            if (
                _sdist_stem(name) is not None
                and not path.is_symlink()
                and path.is_file()
                and path.stat().st_size <= MAX_MIRROR_BYTES
            ):
                found.append(path)
            if len(found) >= MAX_MIRROR_FILES:
                return found
    return found
