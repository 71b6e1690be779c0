"""Who may use the playground, and as whom.

- **Host**: a request must name the address the playground is bound to, or a loopback name
  (``localhost``, ``127.0.0.1``, ``[::1]``); a page of another site whose name was made to
  point at this machine (DNS rebinding) is refused. Bound to every address (``0.0.0.0``), any
  name is accepted and the token is what keeps others out.
- **Origin**: a browser names the page a request comes from; a foreign one is refused.
- **Session**: the page sets a session cookie (HttpOnly, SameSite=Strict); the clicker's
  identity is derived from it, never taken from what the page sends. The cookie is signed with
  a key kept in the data directory (0600), so it outlives a restart.
- **Token**: served on anything but loopback, the playground needs ``THREADLINE_PLAYGROUND_TOKEN``;
  the page is then opened once as ``/?token=…``, which sets the cookie.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

from bot.api.kit import private_dir
from bot.errors import ConfigError

COOKIE = "threadline_session"
COOKIE_MAX_AGE_S = 365 * 24 * 3600
KEY_FILE = "playground.key"
MIN_TOKEN_CHARS = 16
TOKEN_SETTING = "THREADLINE_PLAYGROUND_TOKEN"
_WILDCARDS = {"0.0.0.0", "::", ""}


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, without port) is this machine only."""
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_exposure(bind_host: str, token: str | None) -> None:
    """Refuse to serve the playground beyond loopback without a token (a :class:`ConfigError`)."""
    if is_loopback(bind_host):
        if token is not None and len(token) < MIN_TOKEN_CHARS:
            raise ConfigError(TOKEN_SETTING, f"must be at least {MIN_TOKEN_CHARS} characters")
        return
    if token is None:
        raise ConfigError(
            TOKEN_SETTING,
            f"the playground would be served on {bind_host or 'every address'}, beyond this "
            "machine, where anyone who reaches the port could ask for and approve commands. "
            f"Set {TOKEN_SETTING} (at least {MIN_TOKEN_CHARS} characters, e.g. the output of "
            "`python3 -c 'import secrets; print(secrets.token_urlsafe(24))'`), or "
            "THREADLINE_HTTP_HOST=127.0.0.1, or THREADLINE_PLAYGROUND=false",
        )
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(TOKEN_SETTING, f"must be at least {MIN_TOKEN_CHARS} characters")


class Access:
    """The playground's checks for one bound address and token."""

    def __init__(self, bind_host: str, token: str | None, key: bytes) -> None:
        check_exposure(bind_host, token)
        self._bind = bind_host.strip("[]").lower()
        self.token = token
        if token is not None:  # a new token ends every session made under the old one
            key = hmac.new(key, b"token:" + token.encode(), hashlib.sha256).digest()
        self._key = key

    @classmethod
    def load(cls, data_dir: Path, bind_host: str, token: str | None) -> Access:
        """With the signing key from the data directory (made on first use)."""
        return cls(bind_host, token, _signing_key(data_dir / KEY_FILE))

    @property
    def needs_token(self) -> bool:
        return self.token is not None

    def host_allowed(self, host: str | None) -> bool:
        """Whether a request's ``Host`` header names this playground."""
        if not host:
            return False
        try:
            name = urlsplit(f"//{host}").hostname
        except ValueError:
            return False
        if name is None:
            return False
        return is_loopback(name) or self._bind in _WILDCARDS or name == self._bind

    @staticmethod
    def origin_allowed(origin: str | None, host: str | None) -> bool:
        """A request without ``Origin`` (not from a page) passes; a page must be this one."""
        if origin is None:
            return True
        try:
            return bool(host) and urlsplit(origin).netloc.lower() == (host or "").lower()
        except ValueError:
            return False

    def token_matches(self, given: str | None) -> bool:
        return (
            self.token is not None
            and given is not None
            and hmac.compare_digest(given.encode(), self.token.encode())
        )

    def new_session(self) -> str:
        """A new cookie value: a random session id and its signature."""
        sid = secrets.token_urlsafe(18)
        return f"{sid}.{self._sign(sid)}"

    def user_of(self, cookie: str | None) -> str | None:
        """The user id a valid session cookie stands for, else None."""
        if not cookie or cookie.count(".") != 1:
            return None
        sid, mac = cookie.split(".")
        if not sid or not hmac.compare_digest(mac.encode(), self._sign(sid).encode()):
            return None
        return "s" + hashlib.sha256(b"playground-user:" + sid.encode()).hexdigest()[:20]

    def _sign(self, sid: str) -> str:
        digest = hmac.new(self._key, b"session:" + sid.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _signing_key(path: Path) -> bytes:
    private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = path.read_bytes()
        if len(key) >= 32:
            return key
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    key = secrets.token_bytes(32)
    with os.fdopen(fd, "wb") as out:
        out.write(key)
    return key
