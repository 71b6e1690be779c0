"""Small files of each kind a person might share: a PDF with a text layer, a scanned PDF (pages
with no text), an image, a CSV."""

from __future__ import annotations

import io

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
