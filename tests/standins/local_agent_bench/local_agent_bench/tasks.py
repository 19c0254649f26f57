"""The stand-in's benchmark reader (not LAB's code): `load_tasks(path)`, LAB's entry point's name."""

from __future__ import annotations

import json
from pathlib import Path

from local_agent_bench.types import Task

FIELDS = ("required_tools", "allowed_tools", "forbidden_tools", "assertions")


def load_tasks(path: Path) -> list[Task]:
    document = json.loads(Path(path).read_text(encoding="utf-8"))
    tasks = []
    for item in document["tasks"]:
        lists = {name: list(item.get(name, [])) for name in FIELDS}
        tasks.append(
            Task(
                id=item["id"],
                category=item["category"],
                prompt=item["prompt"],
                requires_network=bool(item.get("requires_network")),
                diagnostic_layer=item.get("diagnostic_layer", "model"),
                **lists,
            )
        )
    return tasks
