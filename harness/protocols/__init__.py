"""Protocols turn a model reply into a step or a classified error.

Only ``json_schema`` exists so far; ``native_tools`` and ``react`` are planned.
"""

from __future__ import annotations

from typing import Any

from harness.protocols.json_schema import JsonSchemaPolicy

PROTOCOLS = {"json_schema": JsonSchemaPolicy}


def make_policy(protocol: str, client: Any, **options: Any) -> Any:
    """A policy for ``protocol`` over ``client``; KeyError for an unknown protocol."""
    return PROTOCOLS[protocol](client, **options)
