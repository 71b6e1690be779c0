"""``threadline healthcheck`` against a stand-in for the running bot's ``/healthz``."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from adapters.healthcheck import healthz_url, run_healthcheck
from bot.config import load_settings


class _V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


@contextmanager
def healthz(status: int, body: bytes, host: str = "127.0.0.1") -> Iterator[int]:
    """A server answering every GET with ``status`` and ``body``; yields its port."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = (_V6Server if ":" in host else ThreadingHTTPServer)((host, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def check(host: str, port: int) -> int:
    return run_healthcheck(load_settings(http_host=host, http_port=port, _env_file=None))


def test_healthy_when_healthz_says_ok(capsys: pytest.CaptureFixture[str]) -> None:
    with healthz(200, json.dumps({"ok": True}).encode()) as port:
        assert check("0.0.0.0", port) == 0  # a wildcard address is asked on loopback
    assert capsys.readouterr().out == f"healthy: http://127.0.0.1:{port}/healthz\n"


def test_an_ipv6_address_is_asked_in_brackets(capsys: pytest.CaptureFixture[str]) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    with ExitStack() as stack:
        try:
            port = stack.enter_context(healthz(200, b'{"ok": true}', host="::1"))
        except OSError:
            pytest.skip("no IPv6 loopback here")
        assert check("::", port) == 0
    assert capsys.readouterr().out == f"healthy: http://[::1]:{port}/healthz\n"


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (503, b'{"ok": false, "store": "down"}', "answered 503: {'ok': False, 'store': 'down'}"),
        (200, b'{"ok": "yes"}', "answered 200: {'ok': 'yes'}"),
        (200, b"<html>not the bot</html>", ": JSONDecodeError: "),
    ],
)
def test_unhealthy_says_why(
    capsys: pytest.CaptureFixture[str], status: int, body: bytes, said: str
) -> None:
    with healthz(status, body) as port:
        assert check("127.0.0.1", port) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"unhealthy: http://127.0.0.1:{port}/healthz") and said in out, out
    assert len(out.splitlines()) == 1


def test_unhealthy_when_nothing_listens(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as free:  # a port just closed: nothing listens on it
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    assert check("127.0.0.1", port) == 1
    assert capsys.readouterr().out.startswith(
        f"unhealthy: {healthz_url(load_settings(http_port=port, _env_file=None))}: "
        "ConnectionRefusedError"
    )
