"""Hosts and origins of URLs, written one way wherever they are compared: a rule of
``fetch_url`` ("Always allow https://docs.python.org"), the hosts an adapter sends the bot's
token to or downloads attachments from."""

from __future__ import annotations

from yarl import URL


def host_of(text: str) -> str | None:
    """The host of the URL ``text`` as rules name it: lower case, no trailing dot, an
    international name in its ASCII form (``xn--bcher-kva.de``, so that a look-alike letter
    cannot pass for another), or None."""
    try:
        host = URL(text.strip()).raw_host
    except (ValueError, TypeError):
        return None
    return host.lower().rstrip(".") if host else None


DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(text: str) -> str | None:
    """The origin of the http(s) URL ``text`` as rules name it: scheme, host (as
    :func:`host_of` writes it) and port, the port left out when it is the scheme's default
    (``https://docs.python.org``, ``http://docs.python.org:8080``), or None."""
    try:
        url = URL(text.strip())
        port = url.port
    except (ValueError, TypeError):
        return None
    scheme, host = url.scheme.lower(), host_of(text)
    if scheme not in DEFAULT_PORTS or not host or port is None:
        return None
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" if port == DEFAULT_PORTS[scheme] else f"{scheme}://{shown}:{port}"
