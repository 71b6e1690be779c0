"""A PostgreSQL URL as it may be shown (without its password), and a failure to connect in plain
words."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import asyncpg


def redacted(url: str) -> str:
    """``postgresql://user@host:port/dbname``: the URL without its password or query."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "postgresql://(an unreadable URL)"
    user = f"{parts.username}@" if parts.username else ""
    return f"{parts.scheme}://{user}{parts.hostname or 'localhost'}:{port or 5432}{parts.path}"


def _password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def describe_failure(url: str, exc: BaseException) -> str:
    """Why connecting to the database at ``url`` failed, naming it without its password."""
    where = redacted(url)
    if isinstance(exc, ConnectionRefusedError):
        reason = "the connection was refused (is PostgreSQL running, and on this port?)"
    elif isinstance(exc, socket.gaierror):
        reason = "the host name did not resolve"
    elif isinstance(exc, TimeoutError):
        reason = "no answer in time (a firewall, or a wrong address?)"
    elif isinstance(
        exc, asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError
    ):
        reason = f"the server refused the login: {exc}"
    elif isinstance(exc, asyncpg.InvalidCatalogNameError):
        reason = "the database does not exist (create it first: createdb)"
    elif isinstance(exc, OSError):
        reason = exc.strerror or str(exc)
    else:
        reason = str(exc) or type(exc).__name__
    password = _password(url)
    if password:
        reason = reason.replace(password, "[redacted]")
    return f"cannot use PostgreSQL at {where}: {reason}"
