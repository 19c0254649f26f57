"""Redaction: no host path, user name or host name leaves the machine inside a result bundle.

Everything written to a bundle goes through `Redactor.text`. The bundle lint (`find_leaks`)
runs over finished bundles and reports anything that still looks like this host.

A path is caught in every form it takes in the files a run writes: plain (`/home/ann/x`),
JSON-escaped (`\\/home\\/ann`), `\\u002f`-escaped and URL-encoded (`%2Fhome%2Fann`). It is
replaced only at path boundaries: `/home/ann` is the home in `/home/ann/x` and `"/home/ann"`,
never in `/home/ann2` or `/srv/home/ann`. `/root`, a home every Linux system and container has,
names no one: it is the home only at the start of a longer path (`/root/x`), never alone (an
audit's list of folders tried names it), as the account name `root` is never a user's. A host
name is caught in its full and its short form.

Binary data (a file holding a NUL byte or bytes that are not UTF-8, such as a harness's SQLite
database) is looked through for every host path, and for the user and host names of at least
MIN_BINARY_WORD characters only: a shorter name turns up in stored numbers by chance (two bytes of
an 8-byte float spell a host named `vm`, between bytes that are not letters, in about one float in
4,000), so in binary data it cannot be told from noise.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import socket
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

from harness.io import MAX_SCENARIO_BYTES
from repro.core.config import PROJECT_ROOT, cache_dir
from repro.core.errors import BadInput

# Account names that say nothing about a person; redacting them would mangle ordinary words.
GENERIC_ACCOUNTS = {"root", "runner", "user", "ubuntu", "debian", "admin", "ci", "docker", "nobody"}
GENERIC_HOSTS = {"localhost", "localhost.localdomain", "docker", "ubuntu", "debian"}
# Home folders that say nothing about a person: a host path only with more path after them.
GENERIC_HOMES = {"/root"}

# How "/" is written in each form a path can take in a bundle (as regular expressions); the
# escaped forms come first, and the "/" of a JSON "\/" is never taken for a plain one.
SEPARATORS = {
    "JSON-escaped": r"\\/",
    "\\u002f-escaped": r"\\u002[fF]",
    "URL-encoded": "%2[fF]",
    "plain": r"(?<!\\)/",
}
PATH_CHAR = r"[\w~+@-]"
# A path starts where no path character precedes it (an encoded separator or colon may).
START = r"(?:(?<![\w.~+@-])|(?<=\\u002[fF])|(?<=%2[fF])|(?<=%3[aA]))"
# ... and ends where no path character follows (a full stop ends a sentence, not a path).
END = rf"(?!{PATH_CHAR}|\.{PATH_CHAR})"
MAX_SCAN_BYTES = 256 * 1024 * 1024
SCAN_CHUNK = 1024 * 1024  # characters of a scanned text looked at together (TextScan)
MIN_BINARY_WORD = 4  # the shortest user or host name looked for in binary data (module docstring)


def _home_like(separator: str) -> re.Pattern:
    """Any home folder (/home/NAME/, /Users/NAME/, /root/) written with `separator`."""
    s = separator
    return re.compile(rf"(?<![<>]){START}(?:{s}(?:home|Users){s}[A-Za-z0-9._-]+|{s}root)(?={s})(?:[^\s\"'<>\\%]|{s})*")


HOME_LIKE = {form: _home_like(separator) for form, separator in SEPARATORS.items()}
# Every home-like path (HOME_LIKE) holds one of these; a path is read up to HOME_SPAN characters.
HOME_LITERALS = ("home", "Users", "root")
HOME_SPAN = 4096
ENCODED_SEPARATOR = re.compile(r"\\/|\\u002[fF]|%2[fF]")
HOME_ROOT = re.compile(r"/(?:home|Users)/[^/]+|/root")


def home_root(path: str) -> str:
    """The home folder a home-like path starts with ("/home/NAME", "/Users/NAME", "/root"), in
    plain form whatever separator it was written with."""
    plain = ENCODED_SEPARATOR.sub("/", path)
    found = HOME_ROOT.match(plain)
    return found.group(0) if found else plain


def data_homes(text: str) -> frozenset[str]:
    """The home folders that `text` (a scenario, a fixture) names as data: a fictional user's
    project is not the host's identity when the pinned suite itself holds it. A text without a
    literal every home-like path holds names none (most scenario files: no pattern runs)."""
    if not any(literal in text for literal in HOME_LITERALS):
        return frozenset()
    return frozenset(home_root(match.group(0)) for pattern in HOME_LIKE.values() for match in pattern.finditer(text))


def suite_data_homes(folder: Path) -> frozenset[str]:
    """The home folders named by the scenario and fixture files embedded for a suite (`data_homes`
    of each). Only regular files of at most MAX_SCENARIO_BYTES (the largest suite file the harness
    loads) are read, links never followed: a larger file is no scenario or fixture of the suite, so
    the homes it names do not count (a leak they would excuse is still reported). The answer is kept
    for as long as the folder's files are unchanged, so a check reads the suite once, not once per
    cell."""
    files = _data_files(folder)
    return _homes_of(tuple(files)) if files else frozenset()


def _data_files(folder: Path) -> list[tuple[str, int, int, int]]:
    """(path, size, mtime, inode) of every regular file under `folder` within the bound, sorted."""
    found = []
    for root, _folders, names in os.walk(folder, followlinks=False):
        for name in names:
            path = os.path.join(root, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue  # gone since the walk listed it
            if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_SCENARIO_BYTES:
                found.append((path, info.st_size, info.st_mtime_ns, info.st_ino))
    return sorted(found)


@lru_cache(maxsize=16)
def _homes_of(files: tuple[tuple[str, int, int, int], ...]) -> frozenset[str]:
    homes: frozenset[str] = frozenset()
    for path, *_stamp in files:
        with contextlib.suppress(BadInput):
            homes |= data_homes(_scan_text(Path(path), MAX_SCENARIO_BYTES))
    return homes


@dataclass
class HostIdentity:
    """What identifies this host: the strings a bundle must not contain."""

    project_root: str
    home: str
    cache: str
    user: str
    host: str
    extra_paths: dict[str, str] = field(default_factory=dict)
    fqdn: str = ""

    @classmethod
    def current(cls) -> HostIdentity:
        return cls(
            project_root=str(PROJECT_ROOT),
            home=str(Path.home()),
            cache=str(cache_dir()),
            user=_user_name(),
            host=socket.gethostname(),
            fqdn=_full_host_name(),
        )

    def host_names(self) -> list[str]:
        """The full and the short host names worth redacting, longest first."""
        names = {name for full in (self.fqdn, self.host) if full for name in (full, full.split(".")[0])}
        return sorted((name for name in names if name.lower() not in GENERIC_HOSTS), key=len, reverse=True)


def _user_name() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry, e.g. in some containers
        return os.environ.get("USER", "")


@lru_cache(maxsize=1)
def _full_host_name() -> str:
    try:
        return socket.getfqdn()
    except OSError:
        return ""


@dataclass(frozen=True)
class PathRule:
    """One host path in one form: the pattern that finds it at path boundaries and its label, and
    a literal every match holds (`needle`, to be looked for case-folded when `fold`)."""

    label: str
    form: str
    pattern: re.Pattern
    needle: str
    fold: bool

    @classmethod
    def of(cls, path: str, label: str, form: str, *, beneath: bool = False) -> PathRule:
        """`beneath`: the path counts only with more path after it (GENERIC_HOMES)."""
        longest = max(path.strip("/").split("/"), key=len)
        fold = form == "URL-encoded"
        needle = quote(longest, safe="").lower() if fold else longest
        return cls(label, form, path_pattern(path, form, beneath=beneath), needle, fold)


class TextScan:
    """Regular expressions run over a text only where a literal every match holds occurs: the
    text is taken in chunks of SCAN_CHUNK characters, a chunk is looked at with a C-speed literal
    search first, and a pattern runs only over the chunks that hold its literal (with enough
    characters after each chunk for a match that starts in it). A large file costs about one pass
    per literal rather than one regular-expression pass per pattern."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._folded: str | None = None

    def _holds(self, literal: str, start: int, end: int, fold: bool) -> bool:
        if not fold:
            return self.text.find(literal, start, end) >= 0
        if not literal.isascii():
            return True  # the pattern decides
        if self._folded is None:
            self._folded = folded(self.text)
        return self._folded.find(literal, start, end) >= 0  # `literal` folded by _windows

    def _windows(self, literals: tuple[str, ...], span: int, fold: bool) -> Iterator[tuple[int, int, int]]:
        """(start, end, chunk end) of each chunk holding a literal, `span` characters past its end."""
        literals = tuple(literal.lower() for literal in literals) if fold else literals
        for start in range(0, max(len(self.text), 1), SCAN_CHUNK):
            end = min(len(self.text), start + SCAN_CHUNK + span)
            if any(self._holds(literal, start, end, fold) for literal in literals):
                yield start, end, start + SCAN_CHUNK

    def search(self, pattern: re.Pattern, literal: str, *, fold: bool = False) -> bool:
        """Whether `pattern` (whose matches all hold `literal` and are shorter than the pattern's
        own text) matches somewhere."""
        span = len(pattern.pattern) + 8
        return any(pattern.search(self.text, start, end) for start, end, _ in self._windows((literal,), span, fold))

    def finditer(self, pattern: re.Pattern, literals: tuple[str, ...], span: int) -> Iterator[re.Match]:
        """The matches of `pattern` (each holding one of `literals`), each taken once, cut at
        `span` characters past the chunk it starts in."""
        for start, end, chunk_end in self._windows(literals, span, False):
            yield from (match for match in pattern.finditer(self.text, start, end) if match.start() < chunk_end)


def path_pattern(path: str, form: str, *, beneath: bool = False) -> re.Pattern:
    """`path` as written in `form`, matched only at path boundaries (with `beneath`, only where a
    separator follows it)."""
    separator = SEPARATORS[form]
    parts = path.strip("/").split("/")
    if form == "URL-encoded":
        parts = [quote(part, safe="") for part in parts]
    body = separator + separator.join(re.escape(part) for part in parts)
    return re.compile(
        START + body + (f"(?={separator})" if beneath else END), re.IGNORECASE if form == "URL-encoded" else 0
    )


class Redactor:
    def __init__(self, identity: HostIdentity | None = None) -> None:
        self.identity = identity or HostIdentity.current()
        self._paths = self._path_rules()
        self._words = self._word_rules()

    def _path_rules(self) -> list[PathRule]:
        ident = self.identity
        pairs = [(ident.cache, "<CACHE>"), (ident.project_root, "<PROJECT_ROOT>"), (ident.home, "<HOME>")]
        pairs += [(path, label) for label, path in ident.extra_paths.items()]
        pairs = [(path.rstrip("/"), label) for path, label in pairs if path and path.rstrip("/") not in ("", "/")]
        pairs.sort(key=lambda pair: len(pair[0]), reverse=True)  # longest (most specific) first
        return [
            PathRule.of(path, label, form, beneath=label == "<HOME>" and path in GENERIC_HOMES)
            for path, label in pairs
            for form in SEPARATORS
        ]

    def _word_rules(self) -> list[tuple[re.Pattern, str, str]]:
        """(pattern, label, the word) for the user and host names, matched case-insensitively."""
        rules = []
        if self.identity.user and self.identity.user.lower() not in GENERIC_ACCOUNTS:
            rules.append((_word(self.identity.user), "<USER>", self.identity.user))
        rules += [(_word(name), "<HOST>", name) for name in self.identity.host_names()]
        return rules

    def text(self, value: str) -> str:
        """`value` with every host path, user and host name replaced by its label. A rule's pattern
        runs only over a text that holds its literal (every match does: PathRule, the word itself),
        so a large cell file costs a C-speed search per rule where it names nothing of the host."""
        return self._replaced(value, self._words)

    def names_host(self, data: bytes) -> bool:
        """Whether `data`, a file kept byte for byte, names a host path, user or host name (what
        `text` would change in it; in binary data, the names of MIN_BINARY_WORD characters or more)."""
        value = data.decode("latin-1")
        return self._replaced(value, self._words_in(is_binary(data))) != value

    def _words_in(self, binary: bool) -> list[tuple[re.Pattern, str, str]]:
        return [rule for rule in self._words if len(rule[2]) >= MIN_BINARY_WORD] if binary else self._words

    def _replaced(self, value: str, words: list[tuple[re.Pattern, str, str]]) -> str:
        for rule in self._paths:
            if holds(value, rule.needle, rule.fold):
                value = rule.pattern.sub(rule.label, value)
        for pattern, label, word in words:
            if holds(value, word, True):
                value = pattern.sub(label, value)
        return value

    def leaks(
        self, value: str, data: frozenset[str] = frozenset(), *, any_home: bool = True, binary: bool = False
    ) -> list[str]:
        """What in `value` still identifies this host, naming the form it slipped through in (empty
        when clean). Home-like paths under a home in `data` (data_homes of the suite) are not
        counted, nor any other home with `any_home` False (for what a model wrote: its text may
        name any home, and the container it ran in saw no host path); this host's own home,
        project, cache, user and host names always are (in `binary` data, the names of
        MIN_BINARY_WORD characters or more)."""
        scan = TextScan(value)
        found = [
            f"the host's {rule.label} path{_in_form(rule.form)}"
            for rule in self._paths
            if scan.search(rule.pattern, rule.needle, fold=rule.fold)
        ]
        found += [
            f"the host's {label[1:-1].lower()} name"
            for pattern, label, word in self._words_in(binary)
            if scan.search(pattern, word, fold=True)
        ]
        for form, pattern in HOME_LIKE.items() if any_home else ():
            matches = [match.group(0) for match in scan.finditer(pattern, HOME_LITERALS, HOME_SPAN)]
            found += [f"host path {path[:60]}{_in_form(form)}" for path in matches if home_root(path) not in data]
        return list(dict.fromkeys(found))


def is_binary(data: bytes) -> bool:
    """Whether `data` is binary: it holds a NUL byte or does not read as UTF-8."""
    if b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def holds(text: str, literal: str, fold: bool) -> bool:
    """Whether `text` holds `literal`; with `fold`, as a case-insensitive pattern could find it
    (always, for a literal that is not ASCII: the pattern decides)."""
    if not fold:
        return literal in text
    return not literal.isascii() or literal.lower() in folded(text)


def folded(text: str) -> str:
    """`text` lower-cased, with the two letters re.IGNORECASE takes for an ASCII one that lower()
    leaves alone (dotless i, long s) made that letter: an ASCII literal a case-insensitive pattern
    matches in `text` is in this."""
    return text.lower().replace("\u0131", "i").replace("\u017f", "s")


def _in_form(form: str) -> str:
    return "" if form == "plain" else f" ({form})"


def _word(value: str) -> re.Pattern:
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])", re.IGNORECASE)


def find_leaks(
    bundle: Path,
    redactor: Redactor | None = None,
    data: frozenset[str] = frozenset(),
    model_output: frozenset[str] = frozenset(),
) -> list[str]:
    """The bundle lint: one line per leak in each file that still holds a host path, user or host name.

    Links are not followed (a link in a bundle is the check's business, not the lint's); a file
    that cannot be scanned (not regular, too large) is named, never skipped silently.
    """
    redactor = redactor or Redactor()
    problems = []
    for path in _bundle_entries(bundle):
        relative = path.relative_to(bundle)
        try:
            content = _scan_bytes(path)
        except BadInput as error:
            problems.append(f"{relative}: not scanned ({error.lines[0].removeprefix(f'{path}: ')})")
            continue
        text = content.decode("utf-8", errors="replace")
        leaks = redactor.leaks(text, data, any_home=path.name not in model_output, binary=is_binary(content))
        problems += [f"{relative}: {leak}" for leak in sorted(set(leaks))]
    return problems


def _bundle_entries(bundle: Path) -> list[Path]:
    """Every entry under `bundle` but folders, links to folders never followed."""
    entries = []
    for folder, folders, names in os.walk(bundle, followlinks=False):
        entries += [Path(folder) / name for name in names]
        entries += [Path(folder) / name for name in folders if os.path.islink(Path(folder) / name)]
    return sorted(entries)


def _scan_bytes(path: Path, limit: int = MAX_SCAN_BYTES) -> bytes:
    from repro.core.yamlsource import read_bounded

    info = path.lstat()
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(f"{path}: not a regular file")
    return read_bounded(path, limit, follow_links=False)


def _scan_text(path: Path, limit: int = MAX_SCAN_BYTES) -> str:
    return _scan_bytes(path, limit).decode("utf-8", errors="replace")
