"""Shared files' names made safe, and files told apart by their bytes."""

from __future__ import annotations

import pytest

from bot.files.intake import sees_images
from bot.files.kinds import preview, sniff
from bot.files.names import MAX_CHARS, safe_name
from tests.fakes.documents import PNG, text_pdf


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("../../x", "x"),
        ("..\\..\\windows\\evil.bat", "evil.bat"),
        ("a\x00b.txt", "a_b.txt"),
        (".bashrc", "bashrc"),
        ("..", "file"),
        ("", "file"),
        ("résumé final.pdf", "r_sum_final.pdf"),
        ("archive.tar.gz", "archive.tar.gz"),
        ("x.verylongextensionthatisnotone", "x.verylongextensionthatisnotone"),
        ("a/../../b..c", "b.c"),
    ],
)
def test_names_are_one_safe_component(raw: str, expected: str) -> None:
    assert safe_name(raw) == expected


def test_long_names_keep_their_extension_and_taken_names_are_numbered() -> None:
    long = safe_name("x" * 300 + ".csv")
    assert len(long) <= MAX_CHARS and long.endswith(".csv")
    assert safe_name("a.txt", {"a.txt", "a-2.txt"}) == "a-3.txt"
    assert safe_name("Makefile", {"Makefile"}) == "Makefile-2"


def test_kinds_come_from_the_bytes() -> None:
    assert sniff(PNG).kind == "image" and sniff(PNG).mimetype == "image/png"
    assert sniff(b"\xff\xd8\xff\xe0rest").mimetype == "image/jpeg"
    assert sniff(b"RIFF\x00\x00\x00\x00WEBPVP8 ").mimetype == "image/webp"
    assert sniff(text_pdf("hi")).kind == "pdf"
    assert sniff("naïve,text\n".encode()).text == "naïve,text\n"
    assert sniff(b"\xef\xbb\xbfbom").text == "bom"
    assert sniff(b"a\x00b").kind == "binary"
    assert sniff(b"\xff\xfe\xfa").kind == "binary"


def test_a_preview_is_bounded_and_cannot_close_its_fence() -> None:
    assert preview("\n".join(str(n) for n in range(100)), 1000, max_lines=3) == "0\n1\n2\n…"
    assert preview("y" * 50, 10) == "y" * 10 + "…"
    assert "```" not in preview("```\nbreak out\n```", 100)


@pytest.mark.parametrize(
    ("vision", "model", "demo", "sees"),
    [
        ("auto", "gpt-4o-mini", False, True),
        ("auto", "gpt-3.5-turbo", False, False),
        ("auto", "llava:13b", False, True),
        ("auto", "gpt-4o-mini", True, False),
        ("on", "llama3", False, True),
        ("off", "gpt-4o", False, False),
    ],
)
def test_vision(vision: str, model: str, demo: bool, sees: bool) -> None:
    assert sees_images(vision, model, demo=demo) is sees
