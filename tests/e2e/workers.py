"""Real ``threadline run`` worker processes on one PostgreSQL database and one fake Slack, for the
end-to-end tests of several workers: each started with its own name, port and fast leases; its
output read all along (kept for a failure's message, and so a chatty worker never blocks on a
full pipe); SIGKILLed or stopped as an operator would.

Slack hands each Socket Mode envelope to the newest open connection, so the worker started last
gets the events while it lives, and the others once it is gone.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

from tests.e2e.test_process_restart import free_port
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, FakeSlack

WAIT = 30.0
STARTED = "HTTP server on"
TTL_S = 2.0
"""The workers' lease time (``THREADLINE_LEASE_TTL_S``): a dead worker's threads are free after it."""
POLL_S = 0.2


class Worker:
    def __init__(self, name: str, proc: asyncio.subprocess.Process, port: int) -> None:
        self.name = name
        self.proc = proc
        self.port = port
        self.lines: list[str] = []
        self._reading: asyncio.Task[None] | None = None

    @property
    def output(self) -> str:
        return "".join(self.lines)

    async def read(self, started: asyncio.Event) -> None:
        assert self.proc.stdout is not None
        while line := (await self.proc.stdout.readline()).decode(errors="replace"):
            self.lines.append(line)
            if STARTED in line:
                started.set()
        started.set()  # it exited: the waiter sees it

    async def kill(self) -> None:
        """SIGKILL: nothing released, nothing written on the way out."""
        self.proc.send_signal(signal.SIGKILL)
        async with asyncio.timeout(WAIT):
            await self.proc.wait()


def environment(
    home: Path, name: str, port: int, url: str, slack: FakeSlack, model_url: str
) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "SLACK_", "DISCORD_", "THREADLINE_"))
    }
    return env | {
        "THREADLINE_DATA_DIR": str(home / "data"),  # shared, as the compose file's volume is
        "THREADLINE_HTTP_PORT": str(port),
        "THREADLINE_DATABASE_URL": url,
        "THREADLINE_WORKER_ID": name,
        "THREADLINE_LEASE_TTL_S": str(TTL_S),
        "THREADLINE_WORKER_POLL_S": str(POLL_S),
        "OPENAI_BASE_URL": model_url,
        "OPENAI_API_KEY": "sk-test",
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_API_URL": slack.api_url,
    }


@asynccontextmanager
async def worker(
    home: Path, name: str, url: str, slack: FakeSlack, model_url: str, **settings: str
) -> AsyncIterator[Worker]:
    """``threadline run`` as worker ``name`` (with ``settings``: environment variables over the
    defaults); yields once it serves and its Socket Mode link is open."""
    port = free_port()
    links = slack.socket.opened
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        "run",
        cwd=home,
        env=environment(home, name, port, url, slack, model_url) | settings,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    running = Worker(name, proc, port)
    started = asyncio.Event()
    running._reading = asyncio.get_running_loop().create_task(running.read(started))
    try:
        async with asyncio.timeout(WAIT):
            await started.wait()
        assert proc.returncode is None, f"worker {name} exited before serving:\n{running.output}"
        await slack.wait_for(lambda: slack.socket.opened > links, WAIT)
        yield running
    except BaseException:
        print(f"--- worker {name}'s output ---\n{running.output}")  # shown with the failure
        raise
    finally:
        if proc.returncode is None:
            proc.terminate()
        async with asyncio.timeout(WAIT):
            await proc.wait()
            await running._reading


async def sql(url: str, query: str, *args: object) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetch(query, *args)
    finally:
        await conn.close()


async def until_rows(url: str, query: str, *args: object) -> list[asyncpg.Record]:
    """Wait for ``query`` to return rows (asked every 20 ms, at most ``WAIT`` seconds)."""
    async with asyncio.timeout(WAIT):
        for _ in range(int(WAIT / 0.02) + 1):
            if rows := await sql(url, query, *args):
                return rows
            await asyncio.sleep(0.02)
    raise TimeoutError(f"no rows for {query} within {WAIT} s")
