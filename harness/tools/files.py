"""File tools over a read-only fixture tree: list_directory, read_file, find_files, current_directory.

The tree is shown as ``/home/<tree>`` and the agent starts in ``workspace.world.cwd``. Paths
are absolute, ``~``-relative or relative to that directory; ``.`` and ``..`` work as in a
shell, and a path that leaves the tree is refused. Nothing touches the real file system: the
tree was read into memory when the scenario loaded.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from harness.model.fixtures import FileNode, FileTree
from harness.tools.context import (
    OK,
    REFUSED,
    Handler,
    Result,
    ToolContext,
    ToolFailure,
    ToolOutcome,
    bounded,
    file_tree,
    world_of,
)

MAX_PATH_CHARS = 300
MAX_LISTED = 100
MAX_FOUND = 50
READ_LIMIT_CHARS = 2400

Parts = tuple[str, ...]


def resolve(tree: FileTree, cwd: Parts, raw: str | None) -> Parts:
    """The path's components below the tree root; ToolFailure (refused) if it leaves the tree."""
    text = bounded(raw, "path", MAX_PATH_CHARS) if raw is not None and raw.strip() else "."
    if text.startswith("/"):
        parts = _walk((), text.split("/"), escape_ok=True)
        root = ("home", tree.name)
        if parts[:2] != root:
            raise ToolFailure(f"refused: {text} is outside your files (they are under {tree.root_path})", REFUSED)
        return parts[2:]
    if text == "~" or text.startswith("~/"):
        return _walk((), text[1:].split("/"), escape_ok=False, shown=text, tree=tree)
    return _walk(cwd, text.split("/"), escape_ok=False, shown=text, tree=tree)


def _walk(start: Parts, pieces: list[str], *, escape_ok: bool, shown: str = "", tree: FileTree | None = None) -> Parts:
    parts = list(start)
    for piece in pieces:
        if piece in ("", "."):
            continue
        if piece != "..":
            parts.append(piece)
        elif parts:
            parts.pop()
        elif not escape_ok:
            root = tree.root_path if tree else "your files"
            raise ToolFailure(f"refused: {shown} leads outside your files (they are under {root})", REFUSED)
    return tuple(parts)


def _node(tree: FileTree, parts: Parts) -> FileNode:
    node = tree.nodes.get(parts)
    if node is None:
        raise ToolFailure(f"no such file or directory: {tree.display(parts)}")
    return node


def _target(ctx: ToolContext, path: str | None) -> tuple[FileTree, Parts, FileNode]:
    tree = file_tree(ctx)
    parts = resolve(tree, world_of(ctx).cwd, path)
    return tree, parts, _node(tree, parts)


def list_directory(ctx: ToolContext, path: str | None) -> ToolOutcome:
    tree, parts, node = _target(ctx, path)
    if node.kind != "dir":
        raise ToolFailure(f"not a directory: {tree.display(parts)}; use read_file to read it")
    entries = [_entry(tree.nodes[(*parts, name)], name) for name in node.children]
    result: Result = {"path": tree.display(parts), "entries": entries[:MAX_LISTED], "count": len(entries)}
    if len(entries) > MAX_LISTED:
        result["note"] = f"showing {MAX_LISTED} of {len(entries)} entries"
    return ToolOutcome(OK, result)


def _entry(node: FileNode, name: str) -> Result:
    if node.kind == "dir":
        return {"name": name, "type": "dir"}
    return {"name": name, "type": "file", "size": node.size}


def read_file(ctx: ToolContext, path: str) -> ToolOutcome:
    tree, parts, node = _target(ctx, path)
    if node.kind != "file":
        raise ToolFailure(f"is a directory: {tree.display(parts)}; use list_directory to list it")
    result: Result = {"path": tree.display(parts), "size": node.size, "text": node.text[:READ_LIMIT_CHARS]}
    if len(node.text) > READ_LIMIT_CHARS:
        result["note"] = f"showing the first {READ_LIMIT_CHARS} of {len(node.text)} characters"
    return ToolOutcome(OK, result)


def find_files(ctx: ToolContext, pattern: str, path: str | None) -> ToolOutcome:
    wanted = bounded(pattern, "pattern", 100).casefold()
    tree, parts, node = _target(ctx, path)
    if node.kind != "dir":
        raise ToolFailure(f"not a directory: {tree.display(parts)}")
    found = [
        tree.display(key)
        for key in sorted(tree.nodes)
        if len(key) > len(parts) and key[: len(parts)] == parts and _name_matches(key, parts, wanted)
    ]
    result: Result = {
        "pattern": pattern.strip(),
        "path": tree.display(parts),
        "matches": found[:MAX_FOUND],
        "count": len(found),
    }
    if not found:
        result["note"] = "nothing matches; patterns use * and ? on names, like *.csv"
    elif len(found) > MAX_FOUND:
        result["note"] = f"showing {MAX_FOUND} of {len(found)} matches"
    return ToolOutcome(OK, result)


def _name_matches(key: Parts, base: Parts, pattern: str) -> bool:
    if "/" in pattern:
        return fnmatchcase("/".join(key[len(base) :]).casefold(), pattern)
    return fnmatchcase(key[-1].casefold(), pattern)


def current_directory(ctx: ToolContext) -> ToolOutcome:
    tree = file_tree(ctx)
    return ToolOutcome(OK, {"path": tree.display(world_of(ctx).cwd)})


HANDLERS: dict[str, Handler] = {
    "list_directory": list_directory,
    "read_file": read_file,
    "find_files": find_files,
    "current_directory": current_directory,
}
