"""Why a connection to a server could not be made, in plain words, from an exception's chain.

HTTP clients wrap the operating system's answer (``ConnectionRefusedError``, ``socket.gaierror``,
``OSError(ENETUNREACH)``, an ``ssl`` error) in their own exceptions, and some report every failed
connect as a timeout; the real reason stays in the ``__cause__`` / ``__context__`` chain.
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator

_UNREACHABLE = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN, errno.EHOSTDOWN}
_RESET = {errno.ECONNRESET, errno.ECONNABORTED, errno.EPIPE}
_MAX_LINKS = 20


def chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and its causes and contexts, outermost first (each once)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(seen) < _MAX_LINKS:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def unreachable_reason(exc: BaseException, host: str) -> str | None:
    """Why ``host`` could not be reached, or None when the chain names no reason (a timeout)."""
    links = list(chain(exc))
    for link in links:
        reason = _specific(link, host)
        if reason is not None:
            return reason
    for link in links:
        if isinstance(link, OSError) and not isinstance(link, TimeoutError) and link.strerror:
            return str(link.strerror)
    return None


def _specific(link: BaseException, host: str) -> str | None:
    if isinstance(link, socket.gaierror):
        return f"the name {host} could not be resolved ({link.strerror or link}; offline?)"
    if isinstance(link, ssl.SSLCertVerificationError):
        return f"its TLS certificate was refused ({link.verify_message or link.reason})"
    if isinstance(link, ssl.SSLError):
        return f"the TLS handshake failed ({link.reason or link})"
    if not isinstance(link, OSError) or isinstance(link, TimeoutError):
        return None
    if isinstance(link, ConnectionRefusedError) or link.errno == errno.ECONNREFUSED:
        return "the connection was refused: nothing is listening there"
    if link.errno in _UNREACHABLE:
        return f"there is no route to it ({link.strerror or 'network unreachable'})"
    if isinstance(link, ConnectionResetError) or link.errno in _RESET:
        return "the connection was closed as soon as it was opened"
    return None
