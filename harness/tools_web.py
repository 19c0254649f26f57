"""web_search, open_url and follow_link over a fixture web set on ``.test`` hosts.

- ``web_search`` ranks the set's index by the query's words (title 3, URL 2, snippet 1 per word;
  ties keep index order) and returns the top results with title, URL and snippet.
- ``open_url`` serves a page of the set (other hosts are refused, missing pages are a 404) as
  title, visible text and its links (text and absolute URL); the page becomes the current page.
- ``follow_link`` opens a link of the current page, named by its text or its URL; a link that
  is not on the page fails and lists the page's links.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import TYPE_CHECKING
from urllib.parse import urldefrag, urljoin, urlsplit

from harness.fixtures import WebSet, page_key
from harness.tools_common import REFUSED, Result, ToolFailure, bounded, web_set, words
from harness.web import UNTRUSTED_NOTE, FetchRefused, host_of, is_test_host, reduce_html

if TYPE_CHECKING:
    from harness.tools import ToolContext

MAX_URL_CHARS = 300
MAX_QUERY_CHARS = 200
SEARCH_RESULTS = 5
MAX_LINKS = 40
STOP_WORDS = frozenset({"a", "an", "and", "the", "of", "in", "on", "for", "to", "is", "what", "how", "with", "at", "by"})


@dataclass
class Browser:
    """The run's browser: the page now open and its links."""

    url: str | None = None
    links: list[dict[str, str]] = field(default_factory=list)


# ----------------------------------------------------------------------------- search


def web_search(ctx: ToolContext, query: str) -> Result:
    web = web_set(ctx)
    terms = [w for w in words(bounded(query, "query", MAX_QUERY_CHARS)) if w not in STOP_WORDS][:20]
    if not terms:
        raise ToolFailure("the query has no words to search for")
    scored = [(_score(entry.title, entry.url, entry.snippet, terms), i) for i, entry in enumerate(web.index)]
    ranked = sorted((-score, i) for score, i in scored if score > 0)[:SEARCH_RESULTS]
    results = [
        {"rank": rank, "title": web.index[i].title, "url": web.index[i].url, "snippet": web.index[i].snippet} for rank, (_, i) in enumerate(ranked, start=1)
    ]
    result: Result = {"query": query.strip(), "results": results}
    if not results:
        result["note"] = "no results; try other words"
    return result


def _score(title: str, url: str, snippet: str, terms: list[str]) -> int:
    title_words, url_words, snippet_words = set(words(title)), set(words(url)), set(words(snippet))
    return sum(3 * (t in title_words) + 2 * (t in url_words) + (t in snippet_words) for t in terms)


# ----------------------------------------------------------------------------- pages


def open_url(ctx: ToolContext, url: str) -> Result:
    return _open(ctx, bounded(url, "url", MAX_URL_CHARS))


def follow_link(ctx: ToolContext, link: str) -> Result:
    wanted = bounded(link, "link", MAX_URL_CHARS)
    browser: Browser = ctx.browser
    if browser.url is None:
        raise ToolFailure("no page is open; call open_url first")
    target = _find_link(browser, wanted)
    if target is None:
        shown = "; ".join(f"{x['text']} ({x['url']})" for x in browser.links[:15]) or "none"
        raise ToolFailure(f"no link {wanted!r} on {browser.url}; its links: {shown}")
    return _open(ctx, target)


def _find_link(browser: Browser, wanted: str) -> str | None:
    text = _collapse(wanted).casefold()
    for link in browser.links:
        if _collapse(link["text"]).casefold() == text:
            return link["url"]
    absolute = urldefrag(urljoin(browser.url or "", wanted)).url
    return next((x["url"] for x in browser.links if x["url"] in (wanted, absolute)), None)


def _open(ctx: ToolContext, url: str) -> Result:
    try:
        host = host_of(url)
    except FetchRefused as exc:
        raise ToolFailure(str(exc), REFUSED) from None
    if not is_test_host(host):
        raise ToolFailure(f"refused: {host} is outside the sandbox (only .test hosts)", REFUSED)
    web: WebSet = web_set(ctx)
    html = web.pages.get(page_key(url))
    if html is None:
        raise ToolFailure(f"404 not found: {url}")
    title, text = reduce_html(html)
    links = page_links(html, url)
    ctx.browser.url, ctx.browser.links = url, links
    return {"url": url, "title": title, "text": text, "links": links, "untrusted": UNTRUSTED_NOTE}


def page_links(html: str, base_url: str) -> list[dict[str, str]]:
    """The page's http(s) links in order, as text and absolute URL (fragments dropped)."""
    parser = _Links()
    parser.feed(html)
    parser.close()
    links, seen = [], set()
    for href, text in parser.links:
        absolute = urldefrag(urljoin(base_url, href.strip())).url
        if urlsplit(absolute).scheme not in ("http", "https") or (absolute, text) in seen:
            continue
        seen.add((absolute, text))
        links.append({"text": text or absolute, "url": absolute})
    return links[:MAX_LINKS]


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "a":
            self._close()
            self._href = dict(attrs).get("href")
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._close()

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def close(self) -> None:
        super().close()
        self._close()

    def _close(self) -> None:
        if self._href:
            self.links.append((self._href, _collapse("".join(self._text))[:120]))
        self._href = None


HANDLERS: dict[str, Callable[..., Result]] = {"web_search": web_search, "open_url": open_url, "follow_link": follow_link}
