"""report.html of the published smoke bundle as a page a person reads: contents, a summary line
per scenario that says why it failed, the transcript as chat turns with the failing step marked,
the scenario-by-protocol grid, the failures-first toggles, and links to the exported logs when
`repro export inspect` wrote them into inspect/ beside the report."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from repro.__main__ import main


def test_the_report_shows_why_a_scenario_failed_and_links_its_logs(
    smoke_run: Path, smoke_export: Path, tmp_path: Path
) -> None:
    out = tmp_path / "tables"
    shutil.copytree(smoke_export, out / "inspect")
    assert main(["paper", "render", str(smoke_run), "--out", str(out)]) == 0
    html = (out / "report.html").read_text()
    assert '<nav class="toc" id="contents">' in html and html.count('<li><a href="#row-') == 10
    # ask-001 under native tools: the reply written as text, twice, both rejected, at the failing step
    assert (
        "fail: protocol / text_tool_call at step 1; failed checks: asked, row, finished (3 of 4); partial 0.50" in html
    )
    native = html[html.index(">Qwen2.5 0.5B / native / workspace-smoke: 0/7 passed") :]
    ask = native[: native.index("</details>")]
    assert ask.count('class="turn assistant rejected failing"') == 2 and ask.count('class="turn system"') == 1
    assert (
        "rejected: no tool call in the reply (the call was written as text)" in ask
        and "failed here: text_tool_call" in ask
    )
    assert "&#34;kind&#34;" not in html  # no transcript dumped as escaped JSON
    assert '<table class="grid">' in html and html.count("<h3>Qwen2.5 0.5B / workspace-smoke / b11434</h3>") == 1
    assert 'id="failures-first"' in html and 'id="failures-only"' in html
    links = re.findall(r'<a class="log" href="([^"]+)">', html)
    assert (
        links and all((out / link).is_file() for link in links) and all(link.startswith("inspect/") for link in links)
    )


def test_without_an_export_beside_it_the_report_links_nothing(smoke_run: Path, tmp_path: Path) -> None:
    assert main(["paper", "render", str(smoke_run), "--out", str(tmp_path)]) == 0
    assert 'class="log"' not in (tmp_path / "report.html").read_text()


def test_figures_read_at_a_glance(smoke_run: Path, tmp_path: Path) -> None:
    assert main(["paper", "render", str(smoke_run), "--out", str(tmp_path)]) == 0
    categories = (tmp_path / "figures" / "categories.svg").read_text()
    assert "workspace-smoke" in categories and "ladder-smoke" not in categories  # no empty ladder rows
    rate = (tmp_path / "figures" / "pass_rate.svg").read_text()
    # the colour legend
    assert all(protocol in rate for protocol in ("json_schema", "native_tools", "react", "json_prompt"))
    # short labels
    assert "Qwen2.5 0.5B / native / workspace-smoke" in rate and "qwen2.5-coder-0.5b-instruct-q4_k_m" not in rate
