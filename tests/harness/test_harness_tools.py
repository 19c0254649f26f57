"""The 13 tools: normal use and edge cases (conflicts, rules, approvals, fixtures)."""

from __future__ import annotations

import pytest

from harness.tools import CONFLICT, ERROR, OK, REFUSED, TOOL_SPECS, WAITING, files, weather, web, workspace
from harness.tools.dispatch import HANDLERS, execute
from harness.tools.pages import reduce_html

READ_ALL = {"table": "beds", "query": None, "limit": None}


def _update(row: int, **values):
    cells = {"bed": None, "crop": None, "state": None, **values}
    return {"table": "beds", "row": row, "values": cells}


# ---------------------------------------------------------------------------- table_read


def test_read_returns_numbered_versioned_rows(ctx) -> None:
    out = execute(ctx(), "table_read", {"table": "BEDS", "query": "crop:kale", "limit": None})
    assert out.status == OK
    assert [r["row"] for r in out.result["rows"]] == [1, 3]
    assert out.result["rows"][0] == {"row": 1, "version": 1, "values": {"bed": "B1", "crop": "kale", "state": "dry"}}
    assert out.result["matching_rows"] == 2


def test_read_limit_defaults_to_ten_and_is_bounded(ctx) -> None:
    rows = [{"bed": f"B{i}", "crop": "kale", "state": "dry"} for i in range(30)]
    c = ctx(workspace={"tables": [{"name": "beds", "columns": ["bed", "crop", "state"], "rows": rows}]})
    out = execute(c, "table_read", READ_ALL)
    assert len(out.result["rows"]) == 10 and "showing 10 of 30" in out.result["note"]
    assert len(execute(c, "table_read", {**READ_ALL, "limit": 50}).result["rows"]) == 30
    assert execute(c, "table_read", {**READ_ALL, "limit": 51}).status == ERROR
    assert execute(c, "table_read", {**READ_ALL, "limit": 0}).result["error"] == "args.limit: must be at least 1"


def test_read_unknown_table(ctx) -> None:
    out = execute(ctx(), "table_read", {"table": "pots", "query": None, "limit": None})
    assert out.status == ERROR and "tables: beds" in out.result["error"]


# ---------------------------------------------------------------------------- table_update


def test_update_needs_a_read_first_and_conflict_carries_current_row(ctx) -> None:
    c = ctx()
    out = execute(c, "table_update", _update(1, state="wet"))
    assert out.status == CONFLICT
    assert out.result["current"] == {"row": 1, "version": 1, "values": {"bed": "B1", "crop": "kale", "state": "dry"}}
    assert c.ws.table("beds").rows[0].values["state"] == "dry"


def test_update_after_read_keeps_null_cells(ctx) -> None:
    c = ctx()
    execute(c, "table_read", READ_ALL)
    out = execute(c, "table_update", _update(1, state="wet"))
    assert out.status == OK
    assert out.result["updated"] == {"row": 1, "version": 2, "values": {"bed": "B1", "crop": "kale", "state": "wet"}}
    assert execute(c, "table_update", _update(1, crop="chard")).status == OK  # own write keeps the read fresh


def test_stale_read_conflicts_until_read_again(ctx) -> None:
    c = ctx()
    execute(c, "table_read", READ_ALL)
    c.ws.owner_update_row("beds", {"bed": "B1"}, {"state": "flooded"})
    out = execute(c, "table_update", _update(1, crop="chard"))
    assert out.status == CONFLICT and out.result["current"]["values"]["state"] == "flooded"
    assert execute(c, "table_update", _update(1, crop="chard")).status == CONFLICT  # a conflict is not a read
    execute(c, "table_read", {"table": "beds", "query": "bed:B1", "limit": None})
    assert execute(c, "table_update", _update(1, crop="chard")).status == OK
    assert c.ws.table("beds").rows[0].values == {"bed": "B1", "crop": "chard", "state": "flooded"}


def test_read_only_marks_rows_it_returned(ctx) -> None:
    c = ctx()
    execute(c, "table_read", {"table": "beds", "query": "bed:B2", "limit": None})
    assert execute(c, "table_update", _update(1, state="wet")).status == CONFLICT
    assert execute(c, "table_update", _update(2, state="dry")).status == OK


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"table": "beds", "row": 9, "values": {"state": "x"}}, "there is no row 9"),
        ({"table": "beds", "row": 1, "values": {"colour": "x"}}, "unknown column 'colour'"),
        ({"table": "beds", "row": 1, "values": {"state": None}}, "nothing would change"),
        ({"table": "beds", "row": "1", "values": {}}, "args.row: must be an integer"),
    ],
)
def test_update_errors(ctx, args, message) -> None:
    c = ctx()
    execute(c, "table_read", READ_ALL)
    out = execute(c, "table_update", args)
    assert out.status == ERROR and message in out.result["error"]


# ---------------------------------------------------------------------------- create / add


def test_create_then_add(ctx) -> None:
    c = ctx()
    assert execute(c, "table_create", {"table": "seeds", "columns": ["name", "packets"]}).status == OK
    assert (
        execute(c, "table_create", {"table": "Seeds", "columns": ["x"]}).result["error"]
        == "table 'Seeds' already exists"
    )
    assert execute(c, "table_create", {"table": "pots", "columns": ["a", "A"]}).status == ERROR
    assert execute(c, "table_create", {"table": "pots", "columns": []}).status == ERROR
    out = execute(c, "table_add", {"table": "seeds", "rows": [{"name": "kale", "packets": 2}, {"NAME": "leek"}]})
    assert out.result == {"table": "seeds", "added_rows": [1, 2], "row_count": 2}
    assert c.ws.table("seeds").rows[1].values == {"name": "leek", "packets": None}
    # rows the agent added count as read
    assert execute(c, "table_update", {"table": "seeds", "row": 2, "values": {"packets": 1}}).status == OK


def test_add_rejects_unknown_columns_and_nested_values(ctx) -> None:
    c = ctx()
    assert (
        "unknown column 'soil'" in execute(c, "table_add", {"table": "beds", "rows": [{"soil": "x"}]}).result["error"]
    )
    assert execute(c, "table_add", {"table": "beds", "rows": [{"bed": ["B9"]}]}).status == ERROR
    assert execute(c, "table_add", {"table": "beds", "rows": []}).status == ERROR
    assert len(c.ws.table("beds").rows) == 3


# ---------------------------------------------------------------------------- notes


def test_note_replace_needs_read_but_append_does_not(ctx) -> None:
    c = ctx()
    out = execute(c, "note_write", {"title": "Log", "text": "New.", "mode": "replace"})
    assert out.status == CONFLICT and out.result["current"]["body"] == "Sowed kale in B1."
    assert execute(c, "note_write", {"title": "log", "text": " Watered.", "mode": "append"}).status == OK
    assert c.ws.note("Log").body == "Sowed kale in B1. Watered."
    execute(c, "note_read", {"title": "Log"})
    assert execute(c, "note_write", {"title": "Log", "text": "New.", "mode": "replace"}).status == OK
    assert c.ws.note("Log").body == "New."


def test_note_stale_after_owner_append(ctx) -> None:
    c = ctx()
    execute(c, "note_read", {"title": "Log"})
    c.ws.owner_append_note("Log", "\nFrost tonight.")
    out = execute(c, "note_write", {"title": "Log", "text": "Replaced.", "mode": "replace"})
    assert out.status == CONFLICT and "Frost tonight" in out.result["current"]["body"]


def test_new_note_and_missing_note(ctx) -> None:
    c = ctx()
    assert execute(c, "note_write", {"title": "Plan", "text": "Dig.", "mode": "replace"}).status == OK
    assert execute(c, "note_read", {"title": "Plan"}).result["body"] == "Dig."
    missing = execute(c, "note_read", {"title": "Diary"})
    assert missing.status == ERROR and "notes: Log, Plan" in missing.result["error"]
    assert execute(c, "note_write", {"title": "Plan", "text": "x", "mode": "overwrite"}).status == ERROR


# ---------------------------------------------------------------------------- search


def test_search_covers_notes_rows_and_tasks(ctx) -> None:
    c = ctx()
    execute(c, "task_add", {"to": "Otto", "title": "Water kale", "details": "Bed B1"})
    hits = execute(c, "search", {"query": "kale"}).result["hits"]
    kinds = [next(iter(h)) for h in hits]
    assert kinds == ["note", "table", "table", "task"]
    assert execute(c, "search", {"query": "leek wet"}).result["total"] == 1
    assert execute(c, "search", {"query": "  "}).status == ERROR


# ---------------------------------------------------------------------------- tasks, memories, follow-ups


def test_task_add_to_teammate_owner_and_unknown(ctx) -> None:
    c = ctx()
    assert execute(c, "task_add", {"to": "otto", "title": "Water B1", "details": "Dry."}).result["to"] == "Otto"
    assert execute(c, "task_add", {"to": "You", "title": "Buy seed", "details": ""}).result["to"] == "you"
    out = execute(c, "task_add", {"to": "Zed", "title": "x", "details": ""})
    assert out.status == ERROR and "you, Mira, Otto" in out.result["error"]
    assert [(t.to, t.by, t.new) for t in c.ws.tasks] == [("Otto", "Mira", True), ("you", "Mira", True)]


def test_remember_limits(ctx) -> None:
    c = ctx()
    assert execute(c, "remember", {"fact": "Kale likes lime."}).status == OK
    assert execute(c, "remember", {"fact": "x" * 201}).result["error"] == "args.fact: allows at most 200 characters"
    assert [m.text for m in c.ws.memories if m.new] == ["Kale likes lime."]


def test_follow_up_bounds_and_due_time(ctx) -> None:
    c = ctx()
    assert execute(c, "follow_up", {"minutes": 4, "note": "x"}).status == ERROR
    assert execute(c, "follow_up", {"minutes": 10081, "note": "x"}).status == ERROR
    out = execute(c, "follow_up", {"minutes": 90, "note": "Check frost."})
    assert out.result["follow_up_due"] == "2026-06-01T10:30:00Z"


# ---------------------------------------------------------------------------- rules and approvals


def test_deny_beats_ask_beats_allow(ctx) -> None:
    rules = [
        {"agent": "*", "tool": "note_write", "match": "*", "decision": "allow"},
        {"agent": "mira", "tool": "note_write", "match": "LOG", "decision": "ask"},
        {"agent": "*", "tool": "note_*", "match": "l*", "decision": "deny"},
    ]
    c = ctx(workspace={"rules": rules})
    assert c.ws.decide("Mira", "note_write", "Log") == "deny"
    assert c.ws.decide("Mira", "note_write", "Plan") == "allow"
    assert c.ws.decide("Mira", "web_fetch", "a.test") == "ask"  # default for web_fetch
    assert c.ws.decide("Mira", "table_add", "beds") == "allow"  # default for the rest
    out = execute(c, "note_write", {"title": "Log", "text": "x", "mode": "append"})
    assert out.status == REFUSED and "rule denies" in out.result["error"]
    assert c.ws.note("Log").body == "Sowed kale in B1."


def test_approval_granted_refused_and_unanswered(ctx) -> None:
    rules = [{"agent": "*", "tool": "table_add", "match": "beds", "decision": "ask"}]
    row = {"table": "beds", "rows": [{"bed": "B4", "crop": "pea", "state": "dry"}]}
    granted = ctx(workspace={"rules": rules}, respond={"approve": True})
    assert execute(granted, "table_add", row).status == OK
    refused = ctx(workspace={"rules": rules}, respond={"approve": False})
    out = execute(refused, "table_add", row)
    assert out.status == REFUSED and "owner declined" in out.result["error"]
    assert len(refused.ws.table("beds").rows) == 3
    assert [(a.tool, a.target, a.approved) for a in refused.ws.approvals] == [("table_add", "beds", False)]
    waiting = ctx(workspace={"rules": rules})
    assert execute(waiting, "table_add", row).status == WAITING


def test_ask_uses_scripted_answer_or_waits(ctx) -> None:
    answered = ctx(respond={"answer": "Bed B2."})
    assert execute(answered, "ask", {"question": "Which bed?"}).result == {"answer": "Bed B2."}
    assert execute(ctx(), "ask", {"question": "Which bed?"}).status == WAITING


# ---------------------------------------------------------------------------- web_fetch

PAGE = (
    "<html><head><title> Frost  dates </title><style>p{}</style><script>alert(1)</script></head>"
    "<body><nav>Home | Shop</nav><h1>Frost</h1><p>Last   frost:\n May 12.</p>"
    "<footer>Copyright</footer></body></html>"
)


def test_web_fetch_serves_fixture_reduced_and_untrusted(ctx) -> None:
    c = ctx(
        fixtures={"https://frost.test/dates": PAGE},
        workspace={"rules": [{"tool": "web_fetch", "match": "*.test", "decision": "allow"}]},
    )
    out = execute(c, "web_fetch", {"url": "https://frost.test/dates/"})
    assert out.status == OK
    assert out.result["title"] == "Frost dates"
    assert out.result["text"] == "Frost\nLast frost: May 12."
    assert "untrusted" in out.result["untrusted"].lower()


def test_web_fetch_missing_refused_and_default_ask(ctx) -> None:
    allow = {"rules": [{"tool": "web_fetch", "match": "*", "decision": "allow"}]}
    c = ctx(fixtures={"https://frost.test/dates": PAGE}, workspace=allow)
    missing = execute(c, "web_fetch", {"url": "https://frost.test/other"})
    assert missing.status == ERROR and "404 not found" in missing.result["error"]
    outside = execute(c, "web_fetch", {"url": "https://example.com/"})
    assert outside.status == REFUSED and "only .test hosts" in outside.result["error"]
    assert execute(c, "web_fetch", {"url": "ftp://frost.test/x"}).status == REFUSED
    default = ctx(fixtures={"https://frost.test/dates": PAGE})
    assert execute(default, "web_fetch", {"url": "https://frost.test/dates"}).status == WAITING
    assert default.ws.approvals[0].target == "frost.test"


def test_page_text_is_cut() -> None:
    title, text = reduce_html("<title>T</title><p>" + "word " * 1000 + "</p>")
    assert title == "T" and len(text) <= 2404 and text.endswith("...")


# ---------------------------------------------------------------------------- general


def test_unknown_or_unavailable_tool_and_bad_args(ctx) -> None:
    c = ctx(workspace={"agents": [{"name": "Mira", "role": "r", "tools": ["note_read", "finish"]}]})
    assert "your tools: note_read, finish" in execute(c, "table_read", READ_ALL).result["error"]
    assert execute(c, "note_read", {"title": "Log", "extra": 1}).result["error"] == "args.extra: is not allowed here"
    assert execute(c, "note_read", {}).result["error"] == "args.title: is required"


def test_every_tool_has_one_spec_and_one_handler() -> None:
    modules = (workspace, files, weather, web)
    assert set(HANDLERS) == set(TOOL_SPECS)
    assert sum(len(module.HANDLERS) for module in modules) == len(TOOL_SPECS)  # no name in two modules
