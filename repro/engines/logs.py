"""An engine's or a harness's logs, one per replica or worker, kept as one file of a cell."""

from __future__ import annotations

import re


def joined_logs(what: str, logs: list[str]) -> str:
    """One log as is; several (each replica's engine log, each worker's harness log), each under a
    `--- replica 2 of 3 ---` line."""
    if len(logs) == 1:
        return logs[0]
    return "\n".join(f"--- {what} {index} of {len(logs)} ---\n{log}" for index, log in enumerate(logs, start=1))


def split_logs(what: str, text: str) -> list[str]:
    """The logs `joined_logs` joined, each on its own and byte for byte as given (the newline the
    join put between two is not theirs); a log without those lines: itself alone."""
    parts = re.split(rf"^--- {re.escape(what)} \d+ of \d+ ---$\n?", text, flags=re.MULTILINE)
    if len(parts) == 1:
        return [text]
    logs = parts[1:]
    return [log.removesuffix("\n") for log in logs[:-1]] + logs[-1:]
