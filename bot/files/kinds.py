"""What a shared file is, by its bytes (never by its name alone), and its words.

Images are recognised by their signatures (PNG, JPEG, GIF, WebP: what vision models take), a
PDF by ``%PDF-``, text by decoding as UTF-8 without NULs; anything else is binary.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Literal

Kind = Literal["text", "pdf", "image", "binary"]

_IMAGES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


@dataclass(frozen=True, slots=True)
class Sniffed:
    kind: Kind
    mimetype: str
    text: str | None = None
    """The decoded text of a text file."""


def sniff(data: bytes) -> Sniffed:
    for magic, mimetype in _IMAGES:
        if data.startswith(magic):
            return Sniffed("image", mimetype)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return Sniffed("image", "image/webp")
    if data.startswith(b"%PDF-"):
        return Sniffed("pdf", "application/pdf")
    if b"\x00" not in data:
        try:
            return Sniffed("text", "text/plain", data.decode("utf-8-sig"))
        except UnicodeDecodeError:
            pass
    return Sniffed("binary", "application/octet-stream")


def data_url(data: bytes, mimetype: str) -> str:
    """An image as the ``data:`` URL a Chat Completions image part carries."""
    return f"data:{mimetype};base64,{base64.b64encode(data).decode('ascii')}"


def preview(text: str, max_chars: int, max_lines: int = 20) -> str:
    """The start of ``text``: at most ``max_lines`` lines and ``max_chars`` characters."""
    lines = text.splitlines()
    shown = "\n".join(lines[:max_lines])
    if len(shown) > max_chars:
        shown = shown[:max_chars].rstrip() + "…"
    elif len(lines) > max_lines:
        shown += "\n…"
    return shown.replace("```", "` ` `")


def size_words(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"
