"""Redaction: no host path, user name or host name leaves the machine inside a result bundle.

Everything written to a bundle goes through `Redactor.text`. The bundle lint (`find_leaks`)
runs over finished bundles and reports anything that still looks like this host.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path

from repro.config import PROJECT_ROOT, cache_dir

# Account names that say nothing about a person; redacting them would mangle ordinary words.
GENERIC_ACCOUNTS = {"root", "runner", "user", "ubuntu", "debian", "admin", "ci", "docker", "nobody"}
GENERIC_HOSTS = {"localhost", "docker", "ubuntu", "debian"}
HOME_LIKE = re.compile(r"(?<![\w<>])(?:/(?:home|Users)/[A-Za-z0-9._-]+|/root)(?=/)[^\s\"'<>]*")


@dataclass
class HostIdentity:
    """What identifies this host: the strings a bundle must not contain."""

    project_root: str
    home: str
    cache: str
    user: str
    host: str
    extra_paths: dict[str, str] = field(default_factory=dict)

    @classmethod
    def current(cls) -> HostIdentity:
        return cls(
            project_root=str(PROJECT_ROOT),
            home=str(Path.home()),
            cache=str(cache_dir()),
            user=_user_name(),
            host=socket.gethostname(),
        )


def _user_name() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry, e.g. in some containers
        return os.environ.get("USER", "")


class Redactor:
    def __init__(self, identity: HostIdentity | None = None) -> None:
        self.identity = identity or HostIdentity.current()
        self._paths = self._path_rules()
        self._words = self._word_rules()

    def _path_rules(self) -> list[tuple[str, str]]:
        ident = self.identity
        rules = [(ident.cache, "<CACHE>"), (ident.project_root, "<PROJECT_ROOT>"), (ident.home, "<HOME>")]
        rules += [(path, label) for label, path in ident.extra_paths.items()]
        rules = [(path.rstrip("/"), label) for path, label in rules if path and path.rstrip("/") not in ("", "/")]
        return sorted(rules, key=lambda rule: len(rule[0]), reverse=True)  # longest (most specific) first

    def _word_rules(self) -> list[tuple[re.Pattern, str]]:
        rules = []
        if self.identity.user and self.identity.user.lower() not in GENERIC_ACCOUNTS:
            rules.append((_word(self.identity.user), "<USER>"))
        if self.identity.host and self.identity.host.lower() not in GENERIC_HOSTS:
            rules.append((_word(self.identity.host), "<HOST>"))
        return rules

    def text(self, value: str) -> str:
        for path, label in self._paths:
            value = value.replace(path, label)
        for pattern, label in self._words:
            value = pattern.sub(label, value)
        return value

    def leaks(self, value: str) -> list[str]:
        """What in `value` still identifies this host (empty when clean)."""
        found = [f"the host's {label} path" for path, label in self._paths if path in value]
        found += [f"the host's {label[1:-1].lower()} name" for pattern, label in self._words if pattern.search(value)]
        found += [f"host path {match.group(0)[:60]}" for match in HOME_LIKE.finditer(value)]
        return found


def _word(value: str) -> re.Pattern:
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])", re.IGNORECASE)


def find_leaks(bundle: Path, redactor: Redactor | None = None) -> list[str]:
    """The bundle lint: one line per file that still holds a host path, user or host name."""
    redactor = redactor or Redactor()
    problems = []
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        content = path.read_text(errors="replace")
        for leak in sorted(set(redactor.leaks(content))):
            problems.append(f"{path.relative_to(bundle)}: {leak}")
    return problems
