"""A PDF's pages as text, read within bounds; the one home of ``pypdf``.

Only the pages asked for are looked at: the page tree is walked from its root until enough
pages are found, so a PDF of 100,000 pages costs what its first pages cost (``pypdf``'s own
list of pages reads the whole tree first). The number of pages is what the tree's root
declares. A page whose drawing instructions (its content streams, decoded) exceed
``page_bytes`` is skipped, not read: the time and memory text extraction takes grow with the
number of operators, and that number is the PDF author's choice.

Run as a program (``python -m bot.files.pdf_pages MEMORY CPU PAGES PAGE_BYTES``) it is the
reader :mod:`bot.files.pdf` starts for each shared PDF: it limits its own address space and
CPU time first, reads the PDF from stdin and writes one JSON line per event (the page count,
each page's text or why it was skipped, or why the PDF cannot be read). Nothing but ``pypdf``
and the standard library is imported, so it starts quickly.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pypdf
from pypdf.errors import PyPdfError
from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, NameObject, StreamObject

MAX_DEPTH = 64
"""Page tree levels followed at most."""
_INHERITED = ("/Resources", "/MediaBox", "/CropBox", "/Rotate")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_BROKEN = (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError)


class Unreadable(Exception):
    """The PDF cannot be read; the message says why (``is an encrypted PDF…``)."""


@dataclass(frozen=True, slots=True)
class Page:
    number: int
    text: str | None
    """Its words; None when it was skipped."""
    why: str | None = None
    """Why it was skipped."""


def open_pdf(body: bytes) -> tuple[pypdf.PdfReader, int | None, str | None]:
    """The reader, the number of pages the PDF declares (None: it does not say), its title."""
    try:
        reader = pypdf.PdfReader(io.BytesIO(body))
        if reader.is_encrypted:
            raise Unreadable("is an encrypted PDF; it cannot be read")
        meta = reader.metadata
        title = str(meta.title).strip() if meta is not None and meta.title else None
        root = _page_tree(reader).get_object()
        count = root.get("/Count") if isinstance(root, DictionaryObject) else None
    except _BROKEN as exc:
        raise Unreadable(f"is not a readable PDF: {exc}") from None
    declared = count.get_object() if count is not None else None
    return reader, declared if isinstance(declared, int) and declared >= 0 else None, title


def pages(reader: pypdf.PdfReader, max_pages: int, page_bytes: int) -> Iterator[Page]:
    """The first ``max_pages`` pages, in order; each read, or skipped with the reason."""
    for number, page in enumerate(_leaves(reader, max_pages), 1):
        size = _content_bytes(page)
        if size > page_bytes:
            why = f"{size / 1_000_000:.1f} MB of drawing instructions, more than the bot reads"
            yield Page(number, None, why)
            continue
        try:
            words = tidy(_SPACES.sub(" ", page.extract_text() or ""))
        except _BROKEN as exc:
            yield Page(number, None, f"it cannot be read ({type(exc).__name__})")
            continue
        yield Page(number, words)


def pdf_text(body: bytes, max_chars: int, max_pages: int = 500) -> tuple[str, str | None]:
    """The text of a PDF's pages (``--- page N ---`` before each), at least ``max_chars`` of it
    when there is that much, and its title. Raises :class:`Unreadable`."""
    reader, _, title = open_pdf(body)
    parts: list[str] = []
    size = 0
    try:
        for page in pages(reader, max_pages, page_bytes=sys.maxsize):
            parts.append(f"--- page {page.number} ---\n{page.text or ''}")
            size += len(parts[-1])
            if size > max_chars:
                break
    except _BROKEN as exc:
        raise Unreadable(f"is not a readable PDF: {exc}") from None
    return "\n\n".join(parts), title


def tidy(text: str) -> str:
    """Lines without trailing blanks, and at most one empty line in a row."""
    lines = (line.rstrip() for line in text.splitlines())
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def _leaves(reader: pypdf.PdfReader, limit: int) -> Iterator[pypdf.PageObject]:
    """The page tree's first ``limit`` pages, depth first, with what they inherit; a node seen
    before (a cycle) and levels past :data:`MAX_DEPTH` are not followed."""
    root = _page_tree(reader)
    stack: list[tuple[Any, dict[str, Any], int]] = [(root, {}, 0)]
    seen: set[int] = set()
    found = 0
    while stack and found < limit:
        ref, inherited, depth = stack.pop()
        node = ref.get_object()
        if not isinstance(node, DictionaryObject) or id(node) in seen or depth > MAX_DEPTH:
            continue
        seen.add(id(node))
        kids = node.get("/Kids")
        kind = node.get("/Type")
        if kind == "/Page" or (kind is None and kids is None):
            found += 1
            yield _page(reader, ref, node, inherited)
            continue
        kids = kids.get_object() if kids is not None else None
        if not isinstance(kids, ArrayObject):
            continue
        passed = {**inherited, **{a: node[a] for a in _INHERITED if a in node}}
        stack.extend((kid, passed, depth + 1) for kid in reversed(kids))


def _page_tree(reader: pypdf.PdfReader) -> Any:
    """The root of the page tree (a reference, or the node itself)."""
    catalog = reader.trailer["/Root"].get_object()
    if not isinstance(catalog, DictionaryObject) or "/Pages" not in catalog:
        raise Unreadable("is not a readable PDF: it has no pages")
    return catalog.raw_get("/Pages")


def _page(
    reader: pypdf.PdfReader, ref: Any, node: DictionaryObject, inherited: dict[str, Any]
) -> pypdf.PageObject:
    where = ref if isinstance(ref, IndirectObject) else getattr(node, "indirect_reference", None)
    page = pypdf.PageObject(reader, where)
    page.update(node)
    for attribute, value in inherited.items():
        if attribute not in page:
            page[NameObject(attribute)] = value
    return page


def _content_bytes(page: pypdf.PageObject) -> int:
    """The decoded size of the page's content streams."""
    contents = page.get("/Contents")
    if contents is None:
        return 0
    contents = contents.get_object()
    streams = contents if isinstance(contents, ArrayObject) else [contents]
    total = 0
    for stream in streams:
        found = stream.get_object()
        if isinstance(found, StreamObject):
            total += len(found.get_data())
    return total


# --- the reader process --------------------------------------------------------------------------
def _emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _limit(memory: int, cpu_s: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))


def main(argv: list[str]) -> int:
    memory, cpu_s, max_pages, page_bytes = (int(a) for a in argv[:4])
    _limit(memory, cpu_s)
    body = sys.stdin.buffer.read()
    try:
        reader, count, _ = open_pdf(body)
        _emit({"pages": count})
        for page in pages(reader, max_pages, page_bytes):
            _emit({"page": page.number, "text": page.text, "why": page.why})
    except Unreadable as exc:
        _emit({"unreadable": str(exc)})
    except MemoryError:
        _emit({"stopped": "memory"})
    except _BROKEN as exc:
        _emit({"unreadable": f"is not a readable PDF: {type(exc).__name__}"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
