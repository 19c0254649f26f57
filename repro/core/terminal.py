"""Text from input, made safe to print on a terminal.

A bundle, a matrix or a file name from someone else is input: a cell id holding an ANSI escape
could clear the reviewer's screen, a newline could forge a line of output, and `[/]` or `[blink]`
would be read as rich markup. Everything printed that came from input goes through `printable`
(plain `print`) or `shown` (a rich console): control characters (C0, DEL, C1, and the bidi and
zero-width format characters) appear as escapes (`\\x1b`, `\\n`, `\\u202e`), and `shown` also
escapes markup so it prints as written.
"""

from __future__ import annotations

import re

from rich.markup import escape

UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def printable(value: object) -> str:
    """`value` as text on one line, with every control character written as an escape."""
    return UNSAFE.sub(_escaped, str(value))


def shown(value: object) -> str:
    """`printable(value)` with rich markup escaped, for interpolation into a console.print string."""
    return escape(printable(value))
