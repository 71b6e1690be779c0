"""A private PostgreSQL server for the tests that stop and start it: its own data directory in a
temporary directory, its own port, made with ``initdb`` and run with ``pg_ctl`` from
``/usr/lib/postgresql/*/bin`` (as the ``postgres`` user when the tests run as root, since the
server refuses to run as root). The machine's shared server is never touched.

Skipped with the other PostgreSQL tests (``THREADLINE_TEST_NO_POSTGRES=1``); a machine without
the server's programs fails the test, saying so.
"""

from __future__ import annotations

import asyncio
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.test_process_restart import free_port
from tests.postgres import SKIPPED

START_WAIT_S = 30


def _bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


class PrivateServer:
    """One server of this test's own; :meth:`stop` and :meth:`start` as an operator would."""

    def __init__(self, root: Path, bin_dir: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.bin = bin_dir
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=START_WAIT_S, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stdout}{done.stderr}")

    def init(self) -> None:
        if self._as_postgres:
            entry = pwd.getpwnam("postgres")
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    async def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        await asyncio.to_thread(
            self._run,
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "log"),
            "-w",
            "-t",
            str(START_WAIT_S),
            "start",
        )

    async def stop(self) -> None:
        """A fast shutdown: sessions are ended, transactions in flight rolled back."""
        await asyncio.to_thread(
            self._run, "pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop"
        )

    def stop_now(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")


@pytest.fixture
async def private_postgres() -> AsyncIterator[PrivateServer]:
    """A private PostgreSQL server, started; stopped and removed at the end of the test."""
    if SKIPPED:
        pytest.skip("THREADLINE_TEST_NO_POSTGRES=1: the PostgreSQL tests are skipped")
    bin_dir = _bin()
    if bin_dir is None:
        pytest.fail(
            "the PostgreSQL server programs (initdb, pg_ctl) are not installed", pytrace=False
        )
    if shutil.which("runuser") is None and os.geteuid() == 0:
        pytest.fail(
            "runuser is not on PATH (as root, the server runs as the user postgres)", pytrace=False
        )
    root = Path(tempfile.mkdtemp(prefix="threadline-pg-"))
    server = PrivateServer(root, bin_dir)
    try:
        await asyncio.to_thread(server.init)
        await server.start()
        yield server
    finally:
        await asyncio.to_thread(server.stop_now)
        shutil.rmtree(root, ignore_errors=True)
