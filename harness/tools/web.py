"""The web tools: ``web_fetch`` over the scenario's fixture pages, and ``web_search``,
``open_url`` and ``follow_link`` over a world's web set. Only ``.test`` hosts are reachable.

- ``web_fetch`` serves a page of the scenario's fixtures as title and visible text. A URL outside
  the sandbox is refused before the rules are asked (``execute`` calls ``check_sandbox`` first).
- ``web_search`` ranks the set's index by the query's words (title 3, URL 2, snippet 1 per word;
  ties keep index order) and returns the top results with title, URL and snippet.
- ``open_url`` serves a page of the set (other hosts are refused, missing pages are a 404) as
  title, visible text and its links (text and absolute URL); the page becomes the current page.
- ``follow_link`` opens a link of the current page, named by its text or its URL; a link that
  is not on the page fails and lists the page's links.

harness/tools/pages.py reads the pages (hosts, fixture lookup, HTML to text and links).
"""

from __future__ import annotations

import re
from urllib.parse import urldefrag, urljoin

from harness.model.fixtures import page_key
from harness.tools.context import (
    OK,
    REFUSED,
    Browser,
    Handler,
    Result,
    ToolContext,
    ToolFailure,
    ToolOutcome,
    bounded,
    web_set,
)
from harness.tools.pages import (
    UNTRUSTED_NOTE,
    FetchRefused,
    PageNotFound,
    collapse_whitespace,
    fetch,
    host_of,
    is_test_host,
    page_links,
    reduce_html,
)

MAX_URL_CHARS = 300
MAX_QUERY_CHARS = 200
SEARCH_RESULTS = 5
STOP_WORDS = frozenset(
    {"a", "an", "and", "the", "of", "in", "on", "for", "to", "is", "what", "how", "with", "at", "by"}
)


def check_sandbox(url: str) -> None:
    """ToolFailure (refused) unless ``url`` is an http(s) URL on a ``.test`` host."""
    try:
        host = host_of(url)
    except FetchRefused as exc:
        raise ToolFailure(str(exc), REFUSED) from None
    if not is_test_host(host):
        raise ToolFailure(f"refused: {host} is outside the sandbox (only .test hosts)", REFUSED)


# ----------------------------------------------------------------------------- fetch


def web_fetch(ctx: ToolContext, url: str) -> ToolOutcome:
    try:
        page = fetch(url, ctx.fixtures)
    except FetchRefused as exc:
        raise ToolFailure(str(exc), REFUSED) from None
    except PageNotFound as exc:
        raise ToolFailure(str(exc)) from None
    return ToolOutcome(OK, {"url": page.url, "title": page.title, "text": page.text, "untrusted": UNTRUSTED_NOTE})


# ----------------------------------------------------------------------------- search


def web_search(ctx: ToolContext, query: str) -> ToolOutcome:
    web = web_set(ctx)
    terms = [w for w in _words(bounded(query, "query", MAX_QUERY_CHARS)) if w not in STOP_WORDS][:20]
    if not terms:
        raise ToolFailure("the query has no words to search for")
    scored = [(_score(entry.title, entry.url, entry.snippet, terms), i) for i, entry in enumerate(web.index)]
    ranked = sorted((-score, i) for score, i in scored if score > 0)[:SEARCH_RESULTS]
    results = [
        {"rank": rank, "title": web.index[i].title, "url": web.index[i].url, "snippet": web.index[i].snippet}
        for rank, (_, i) in enumerate(ranked, start=1)
    ]
    result: Result = {"query": query.strip(), "results": results}
    if not results:
        result["note"] = "no results; try other words"
    return ToolOutcome(OK, result)


def _score(title: str, url: str, snippet: str, terms: list[str]) -> int:
    title_words, url_words, snippet_words = set(_words(title)), set(_words(url)), set(_words(snippet))
    return sum(3 * (t in title_words) + 2 * (t in url_words) + (t in snippet_words) for t in terms)


def _words(text: str) -> list[str]:
    """Lower-cased words and numbers of ``text``."""
    return re.findall(r"[a-z0-9]+", text.casefold())


# ----------------------------------------------------------------------------- pages


def open_url(ctx: ToolContext, url: str) -> ToolOutcome:
    return _open(ctx, bounded(url, "url", MAX_URL_CHARS))


def follow_link(ctx: ToolContext, link: str) -> ToolOutcome:
    wanted = bounded(link, "link", MAX_URL_CHARS)
    browser = ctx.browser
    if browser.url is None:
        raise ToolFailure("no page is open; call open_url first")
    target = _find_link(browser, wanted)
    if target is None:
        shown = "; ".join(f"{x['text']} ({x['url']})" for x in browser.links[:15]) or "none"
        raise ToolFailure(f"no link {wanted!r} on {browser.url}; its links: {shown}")
    return _open(ctx, target)


def _find_link(browser: Browser, wanted: str) -> str | None:
    text = collapse_whitespace(wanted).casefold()
    for link in browser.links:
        if collapse_whitespace(link["text"]).casefold() == text:
            return link["url"]
    absolute = urldefrag(urljoin(browser.url or "", wanted)).url
    return next((x["url"] for x in browser.links if x["url"] in (wanted, absolute)), None)


def _open(ctx: ToolContext, url: str) -> ToolOutcome:
    check_sandbox(url)
    html = web_set(ctx).pages.get(page_key(url))
    if html is None:
        raise ToolFailure(f"404 not found: {url}")
    title, text = reduce_html(html)
    links = page_links(html, url)
    ctx.browser.url, ctx.browser.links = url, links
    return ToolOutcome(OK, {"url": url, "title": title, "text": text, "links": links, "untrusted": UNTRUSTED_NOTE})


HANDLERS: dict[str, Handler] = {
    "web_fetch": web_fetch,
    "web_search": web_search,
    "open_url": open_url,
    "follow_link": follow_link,
}
