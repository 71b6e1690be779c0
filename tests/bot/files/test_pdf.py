"""Shared PDFs read in their own process, within bounds their author cannot move: the first
pages of a PDF of 100,000, a page of two million operators skipped, a reader stopped on time,
and what was read said."""

from __future__ import annotations

from bot.files.pdf import PdfLimits, read_pdf
from bot.files.pdf_pages import Unreadable, pdf_text
from tests.fakes.documents import dense_pdf, many_pages_pdf, nested_pdf, scanned_pdf, text_pdf


async def test_a_small_pdf_is_read_whole() -> None:
    read = await read_pdf(text_pdf("Revenue grew", "Costs fell"), PdfLimits())
    assert read.whole and read.pages == 2
    assert read.text == ["--- page 1 ---\nRevenue grew", "--- page 2 ---\nCosts fell"]


async def test_only_the_first_pages_of_a_huge_pdf_are_read_and_the_rest_is_named() -> None:
    read = await read_pdf(many_pages_pdf(100_000), PdfLimits(pages=50))
    assert (read.pages, read.read, len(read.text)) == (100_000, 50, 50)
    assert not read.whole
    assert read.what_was_read() == "read pages 1–50 of 100,000 (the bot reads at most 50)"


async def test_a_page_of_millions_of_operators_is_skipped_and_named() -> None:
    read = await read_pdf(dense_pdf(2_000_000), PdfLimits())
    assert read.text == [] and read.read == 1
    assert read.what_was_read() == (
        "read page 1 of 1; skipped page 1 (14.0 MB of drawing instructions, more than the bot reads)"
    )


async def test_a_reader_that_takes_too_long_is_stopped_and_what_it_read_is_kept() -> None:
    slow = dense_pdf(300_000, pages=40)  # about 2 MB of instructions a page: allowed, but slow
    read = await read_pdf(slow, PdfLimits(seconds=1.5, page_bytes=10_000_000))
    assert read.stopped == "stopped after 1.5 s"
    assert 0 <= read.read < 40
    assert read.what_was_read().startswith("read ")


async def test_a_reader_that_needs_too_much_memory_is_stopped() -> None:
    big = dense_pdf(2_000_000)
    read = await read_pdf(big, PdfLimits(page_bytes=10**9, memory_bytes=200 * 1024 * 1024))
    assert read.text == [] and read.stopped == "it needed more than 200 MB"
    assert read.what_was_read() == "read no page of 1 (it needed more than 200 MB)"


async def test_a_scan_and_a_broken_file_say_what_they_are() -> None:
    scan = await read_pdf(scanned_pdf(), PdfLimits())
    assert scan.whole and all(t.endswith("---\n") for t in scan.text)
    broken = await read_pdf(b"%PDF-1.4 not really", PdfLimits())
    assert broken.unreadable is not None and broken.unreadable.startswith("is not a readable PDF")


def test_fetch_url_reads_pdfs_with_the_same_page_walk() -> None:
    text, _ = pdf_text(many_pages_pdf(2_000), 200, max_pages=500)
    assert text.startswith("--- page 1 ---\nSame words on every page")
    assert text.count("--- page") < 20  # stopped once it had enough characters
    try:
        pdf_text(b"%PDF-1.4 nope", 100)
    except Unreadable as exc:
        assert "not a readable PDF" in str(exc)
    else:
        raise AssertionError("a broken PDF was read")


async def test_a_page_deep_in_the_tree_inherits_its_resources_and_a_cycle_ends() -> None:
    nested = await read_pdf(nested_pdf("Inherited font"), PdfLimits())
    assert nested.whole and nested.text == ["--- page 1 ---\nInherited font"]
    looped = await read_pdf(nested_pdf("Round and round", cycle=True), PdfLimits())
    assert looped.text == ["--- page 1 ---\nRound and round"] and looped.read == 1
