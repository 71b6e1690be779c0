"""The sandbox-escape suite's world: a bot home with canary secrets (in the bot's environment,
its ``.env``, ``threadline.toml``, database and another thread's workspace), a real bot process
started in it (as root, and as an unprivileged user when the suite runs as root), and a tally of
attempts and escapes printed at the end of the run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.tools.sandbox import directory_name
from tests.sandboxing import WAIT, sandbox_runner

REPO = Path(__file__).resolve().parents[2]
BOT_USER = 61234
"""The unprivileged user the bot runs as in the second half of the suite (needs no passwd entry)."""
THREAD = "playground:attacker"
OTHER_THREAD = "playground:victim"


@dataclass
class Tally:
    attempts: dict[str, bool] = field(default_factory=dict)
    canaries_seen: int = 0

    def record(self, name: str, escaped: bool) -> None:
        self.attempts[name] = self.attempts.get(name, False) or escaped

    @property
    def escapes(self) -> list[str]:
        return [name for name, escaped in self.attempts.items() if escaped]


TALLY = Tally()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TALLY.attempts:
        terminalreporter.write_line(
            f"sandbox-escape suite: {len(TALLY.attempts)} attempts, {len(TALLY.escapes)} escapes "
            f"{TALLY.escapes or ''}, {TALLY.canaries_seen} canary secrets found in tool results "
            "and logs"
        )


@pytest.fixture
def tally() -> Tally:
    return TALLY


@dataclass
class BotHome:
    """Where the bot runs: its working directory with ``.env`` and ``threadline.toml``, its data
    directory, and the canaries hidden in all of them."""

    dir: Path
    canaries: dict[str, str]
    uid: int

    @property
    def data(self) -> Path:
        return self.dir / "data"

    def workspace(self, key: str = THREAD) -> Path:
        return self.data / "workspaces" / directory_name(key)

    def env(self) -> dict[str, str]:
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OPENAI_", "SLACK_", "DISCORD_", "THREADLINE_"))
        }
        return base | {
            "HOME": str(self.dir),
            "OPENAI_API_KEY": self.canaries["env-openai"],
            "SLACK_BOT_TOKEN": self.canaries["env-slack"],
            "SLACK_SIGNING_SECRET": self.canaries["env-signing"],
            "DISCORD_TOKEN": self.canaries["env-discord"],
            "GITHUB_TOKEN": self.canaries["env-github"],
            "CANARY_PLAIN": self.canaries["env-plain"],
            "THREADLINE_SANDBOX": "bwrap",
            "THREADLINE_DATA_DIR": str(self.data),
        }

    def found_in(self, text: str) -> list[str]:
        return [name for name, value in self.canaries.items() if value in text]


def make_home(where: Path, uid: int) -> BotHome:
    canaries = {
        name: f"canary-{name}-{uuid.uuid4().hex}"
        for name in (
            "env-openai",
            "env-slack",
            "env-signing",
            "env-discord",
            "env-github",
            "env-plain",
            "dotenv",
            "toml",
            "database",
            "other-workspace",
        )
    }
    home = BotHome(where, canaries, uid)
    where.mkdir(parents=True, exist_ok=True)
    (where / ".env").write_text(f"SLACK_APP_TOKEN={canaries['dotenv']}\n")
    (where / "threadline.toml").write_text(f'system_prompt = "{canaries["toml"]}"\n')
    home.data.mkdir()
    with sqlite3.connect(home.data / "threadline.sqlite3") as db:
        db.execute("CREATE TABLE transcript (text TEXT)")
        db.execute("INSERT INTO transcript VALUES (?)", (canaries["database"],))
    db.close()
    other = home.workspace(OTHER_THREAD)
    other.mkdir(parents=True)
    (other / "secret.txt").write_text(canaries["other-workspace"])
    if uid != os.geteuid():
        for path in [where, *where.rglob("*")]:
            os.chown(path, uid, uid, follow_symlinks=False)
    return home


class BotProcess:
    """The bot stand-in (``bot_process.py``), driven one request at a time."""

    def __init__(self, home: BotHome, process: asyncio.subprocess.Process, ready: dict[str, Any]):
        self.home = home
        self.kind = "root" if ready["uid"] == 0 else f"uid {ready['uid']}"
        self.process = process
        self.pid: int = ready["pid"]
        self._sent = 0
        self.tools: list[str] = ready["ready"]

    async def call(
        self,
        tool: str,
        key: str = THREAD,
        within: float = WAIT,
        limits: dict[str, int] | None = None,
        **args: Any,
    ) -> str:
        """The result of one tool call (``limits``: a sandbox with these limits instead)."""
        request: dict[str, Any] = {"tool": tool, "args": args, "key": key}
        if limits is not None:
            request["limits"] = limits
        return await self.request(request, within)

    async def request(self, request: dict[str, Any], within: float = WAIT) -> str:
        """Send ``request`` and wait for its answer (answers to requests that timed out
        earlier are passed over)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self._sent += 1
        self.process.stdin.write(json.dumps({**request, "id": self._sent}).encode() + b"\n")
        await self.process.stdin.drain()
        async with asyncio.timeout(within):
            while True:
                line = await self.process.stdout.readline()
                assert line, f"the bot process ended: {self.log()}"
                answer = json.loads(line)
                if answer["id"] == self._sent:
                    result: str = answer["result"]
                    return result

    def log(self) -> str:
        path = self.home.dir / "bot.log"
        return path.read_text(errors="replace") if path.exists() else ""


def python_for(uid: int) -> tuple[list[str], dict[str, str]]:
    """A Python that user ``uid`` can run with this suite's packages, and its environment."""
    paths = [str(REPO), *sys.path[1:]]
    env = {"PYTHONPATH": os.pathsep.join(p for p in paths if p), "PYTHONDONTWRITEBYTECODE": "1"}
    if uid == os.geteuid():
        return [sys.executable], env
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [
        os.path.realpath(sys.executable),
        f"/usr/bin/{version}",
        f"/usr/local/bin/{version}",
    ]
    drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    for candidate in candidates:
        if not os.path.exists(candidate):
            continue
        tried = subprocess.run(
            [*drop, candidate, "-c", "import pydantic, bot.tools.bwrap"],
            env=os.environ | env,
            capture_output=True,
            timeout=WAIT,
            check=False,
        )
        if tried.returncode == 0:
            return [*drop, candidate], env
    pytest.fail(f"no Python that user {uid} can run with this suite's packages: {candidates}")


@contextlib.asynccontextmanager
async def start_bot(home: BotHome) -> AsyncIterator[BotProcess]:
    """The bot stand-in, started in ``home`` as ``home.uid``, with the canaries in its
    environment; killed at the end if it still runs."""
    command, extra = python_for(home.uid)
    script = str(Path(__file__).with_name("bot_process.py"))
    log = os.open(home.dir / "bot.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            script,
            cwd=home.dir,
            env=home.env() | extra,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
        )
    finally:
        os.close(log)
    try:
        assert process.stdout is not None
        async with asyncio.timeout(WAIT):
            line = await process.stdout.readline()
        assert line, f"the bot process did not start: {(home.dir / 'bot.log').read_text()}"
        yield BotProcess(home, process, json.loads(line))
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@contextlib.contextmanager
def bot_home(kind: str, factory: pytest.TempPathFactory) -> Iterator[BotHome]:
    """A bot home for the bot running as root (``root``) or as an unprivileged user."""
    sandbox_runner()  # fails loudly (or skips, when asked) where the sandbox cannot work
    if kind == "root" or os.geteuid() != 0:
        yield make_home(factory.mktemp(f"bot-{kind}") / "home", os.geteuid())
        return
    # An unprivileged bot must reach its home: a directory of its own under /tmp.
    parent = Path(tempfile.mkdtemp(prefix="threadline-security-"))
    try:
        parent.chmod(0o711)
        yield make_home(parent / "home", BOT_USER)
    finally:
        shutil.rmtree(parent, ignore_errors=True)


BOT_KINDS = ["root", "unprivileged"] if os.geteuid() == 0 else ["unprivileged"]


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=BOT_KINDS)
async def bot(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[BotProcess]:
    with bot_home(request.param, tmp_path_factory) as home:
        async with start_bot(home) as process:
            assert "run_command" in process.tools, process.log()
            yield process
        leaked = home.found_in(process.log())
        TALLY.canaries_seen += len(leaked)
        assert not leaked, f"canaries in the bot's log: {leaked}"
