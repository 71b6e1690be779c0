"""Small files of each kind a person might share: a PDF with a text layer, a scanned PDF (pages
with no text), an image, a CSV; and PDFs that cost what their author chooses: a great many
pages, or one page of a great many drawing operators."""

from __future__ import annotations

import io
import zlib

import pypdf

PNG = (
    b"\x89PNG\r\n\x1a\n"
    + b"\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    + bytes(40)
)
CSV = b"city,population\nParis,2102650\nLyon,522250\nMarseille,873076\n"


def text_pdf(*pages: str, to_unicode: dict[str, str] | None = None) -> bytes:
    """A PDF whose pages carry ``pages`` as text (Helvetica, one line each); ``to_unicode``
    maps characters to the UTF-16 code units (hex) its text reads as (``{"A": "D800"}``: a
    lone surrogate, as a broken font map gives)."""
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    if to_unicode:
        font = font[:-2] + b"/ToUnicode %d 0 R >>" % (4 + 2 * len(pages))
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, filled in below
        font,
    ]
    kids = []
    for words in pages:
        stream = f"BT /F1 12 Tf 72 720 Td ({words}) Tj ET".encode()
        objects.append(_stream(stream))
        content = len(objects)
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 3 0 R >> >> >>" % content
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    if to_unicode:
        objects.append(_stream(_cmap(to_unicode)))
    return _written(objects)


def many_pages_pdf(count: int, words: str = "Same words on every page") -> bytes:
    """A PDF of ``count`` pages that share one content stream (about 130 bytes a page)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({words}) Tj ET".encode()
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
    ]
    first = len(objects) + 1
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 3 0 R >> >> >>"
    )
    objects.extend(page for _ in range(count))
    kids = b" ".join(b"%d 0 R" % n for n in range(first, first + count))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, count)
    return _written(objects)


def dense_pdf(operators: int, pages: int = 1) -> bytes:
    """A PDF whose pages each draw ``operators`` text operators (compressed: a few bytes each)."""
    body = b"BT /F1 12 Tf 72 720 Td " + b"(x) Tj " * operators + b"ET"
    packed = zlib.compress(body, 9)
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(packed), packed),
    ]
    kids = []
    for _ in range(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 3 0 R >> >> >>"
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    return _written(objects)


def nested_pdf(words: str, *, cycle: bool = False) -> bytes:
    """One page two levels down a page tree whose root holds the font (the page inherits its
    resources); with ``cycle``, the inner node also lists the root among its kids."""
    stream = f"BT /F1 12 Tf 72 720 Td ({words}) Tj ET".encode()
    kids = b"5 0 R 2 0 R" if cycle else b"5 0 R"
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 /Resources << /Font << /F1 3 0 R >> >> >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Pages /Parent 2 0 R /Kids [%s] /Count 1 >>" % kids,
        b"<< /Type /Page /Parent 4 0 R /MediaBox [0 0 612 792] /Contents 6 0 R >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
    ]
    return _written(objects)


def _written(objects: list[bytes]) -> bytes:
    """The PDF of ``objects`` (numbered from 1, the catalog first), with its xref table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _stream(data: bytes) -> bytes:
    return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(data), data)


def _cmap(to_unicode: dict[str, str]) -> bytes:
    chars = " ".join(f"<{ord(c):02X}> <{units}>" for c, units in to_unicode.items())
    return (
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Odd def "
        "1 begincodespacerange <00> <FF> endcodespacerange "
        f"{len(to_unicode)} beginbfchar {chars} endbfchar "
        "endcmap CMapName currentdict /CMap defineresource pop end end"
    ).encode()


def scanned_pdf(pages: int = 2) -> bytes:
    """A PDF of blank pages: what an image scan without a text layer reads as."""
    writer = pypdf.PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(612, 792)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
