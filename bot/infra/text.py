"""Text made valid Unicode where it comes in.

A Python string may hold a lone surrogate (``\\ud800``): JSON carries one as a valid escape, so
a platform's event, a model's delta or a web page may deliver it, and a PDF's text extraction
may produce one. Such a string cannot be encoded as UTF-8, so it can be neither stored nor
sent. :func:`valid_text` is applied at each edge (inbound values, model deltas, tool output,
file text): a surrogate pair split in two code points is joined, and every lone surrogate
becomes U+FFFD (the replacement character), so everything else of the text is kept.
"""

from __future__ import annotations

REPLACEMENT = "\ufffd"


def valid_text(text: str) -> str:
    """``text``, with each lone surrogate replaced by U+FFFD (``text`` itself when valid)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text
