"""A fetched body as text a model can read: HTML as Markdown of its main content
(trafilatura, which drops navigation, ads and footers), JSON indented, PDF as the text of its
pages (:mod:`bot.files.pdf_pages`, the home of ``pypdf``), plain text as it is. The one home
of ``trafilatura`` and ``lxml``.

CPU-bound: call it in a worker thread. The libraries (and ``pypdf`` with
:mod:`bot.files.pdf_pages`) are imported on first use (by then in that worker thread): together
they hold about 25 MiB, which a process that never reads a page or a PDF does not pay.
"""

from __future__ import annotations

import json
import logging
import re
from types import ModuleType

from bot.infra.text import valid_text
from bot.tools.base import ToolError
from bot.tools.http import Answer

HTML = frozenset({"text/html", "application/xhtml+xml"})
_SPACES = re.compile(r"[ \t\r\f\v]+")
_BLANK_LINES = re.compile(r"\n{3,}")
MAX_PDF_PAGES = 500


def _trafilatura() -> ModuleType:
    import trafilatura

    logging.getLogger("trafilatura").setLevel(logging.ERROR)
    return trafilatura


def readable(page: Answer, max_chars: int) -> tuple[str, str | None]:
    """The text of ``page`` (at least ``max_chars`` of it when there is that much) and its
    title when it has one. ToolError for what cannot be read as text."""
    kind = page.content_type or _sniff(page.body)
    if kind in HTML:
        return _html(page)
    if kind == "application/json" or kind.endswith("+json"):
        return _json(page), None
    if kind == "application/pdf":
        return _pdf(page, max_chars)
    if kind.startswith("text/") or kind.endswith(("+xml", "/xml")):
        return _decode(page), None
    raise ToolError(
        f"{page.url} is {kind} ({len(page.body):,} bytes read), which fetch_url does not read: "
        "it reads HTML, JSON, PDF and text"
    )


def _sniff(body: bytes) -> str:
    head = body[:1024].lstrip().lower()
    if head.startswith(b"%pdf"):
        return "application/pdf"
    if head.startswith((b"<!doctype html", b"<html")):
        return "text/html"
    if head[:1] in (b"{", b"["):
        return "application/json"
    try:
        body[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "text/plain"


def _decode(page: Answer) -> str:
    return page.text()


def _html(page: Answer) -> tuple[str, str | None]:
    import lxml.html

    text = _decode(page) if page.charset else page.body.decode("utf-8", errors="replace")
    try:
        tree = lxml.html.fromstring(
            text.encode("utf-8"), parser=lxml.html.HTMLParser(encoding="utf-8")
        )
    except (ValueError, lxml.etree.ParserError):
        return "", None
    title_node = tree.find(".//title")
    title = _SPACES.sub(" ", title_node.text_content()).strip() if title_node is not None else None
    extracted = _trafilatura().extract(
        text,
        url=page.url,
        output_format="markdown",
        include_links=True,
        include_tables=True,
        include_comments=False,
        favor_recall=True,
    )
    if not extracted:  # little text, or none that looks like an article: all of it
        for node in tree.xpath("//script|//style|//noscript|//template"):
            node.drop_tree()
        extracted = _SPACES.sub(" ", tree.text_content())
    return _tidy(extracted), title or None


def _json(page: Answer) -> str:
    text = _decode(page)
    if not page.complete:
        return text  # cut: not parseable, shown as it came
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


def _pdf(page: Answer, max_chars: int) -> tuple[str, str | None]:
    if not page.complete:
        raise ToolError(
            f"{page.url} is a PDF larger than the {len(page.body):,} bytes fetch_url reads; it cannot be read in part"
        )
    try:
        return pdf_text(page.body, max_chars)
    except ToolError as exc:
        raise ToolError(f"{page.url} {exc}") from None


def pdf_text(body: bytes, max_chars: int) -> tuple[str, str | None]:
    """The text of a PDF's pages (``--- page N ---`` before each) and its title; a scan
    without a text layer gives pages with no words. Raises :class:`ToolError` (``is an
    encrypted PDF…``, ``is not a readable PDF…``) for what cannot be read."""
    from bot.files import pdf_pages

    try:
        text, title = pdf_pages.pdf_text(body, max_chars, MAX_PDF_PAGES)
    except pdf_pages.Unreadable as exc:
        raise ToolError(str(exc)) from None
    return valid_text(text), valid_text(title) if title else None


def _tidy(text: str) -> str:
    """Lines without trailing blanks, and at most one empty line in a row."""
    lines = (line.rstrip() for line in text.splitlines())
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()
