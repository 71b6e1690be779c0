"""A bot killed with SIGKILL in the middle of a command leaves nothing of it running: not the
command, not its background processes, not those that left its session."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import pytest

from tests.sandboxing import WAIT, marker, processes_with, until
from tests.security.conftest import BOT_KINDS, Tally, bot_home, start_bot


@pytest.mark.parametrize("kind", BOT_KINDS)
async def test_a_killed_bot_leaves_no_process_of_its_command(
    kind: str, tmp_path_factory: pytest.TempPathFactory, tally: Tally
) -> None:
    m = marker()
    command = (
        f"sleep 9999.{m} & setsid sleep 9999.{m} & nohup sleep 9999.{m} >/dev/null 2>&1 & "
        f"(sleep 9999.{m} &); setsid -f sleep 9999.{m}; echo up > up.{m}; wait"
    )
    with bot_home(kind, tmp_path_factory) as home:
        async with start_bot(home) as bot:
            call = asyncio.create_task(bot.call("run_command", command=command, timeout_s=600))
            try:
                assert await until((home.workspace() / f"up.{m}").exists, within=WAIT), bot.log()
                started = processes_with(m)
                assert len(started) >= 5, started  # the five sleeps at least
                bot.process.send_signal(signal.SIGKILL)
                await bot.process.wait()
                gone = await until(lambda: not processes_with(m), within=WAIT)
            finally:
                call.cancel()
                with contextlib.suppress(asyncio.CancelledError, AssertionError):
                    await call
                for pid in processes_with(m):  # leave nothing behind, whatever happened
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
    tally.record(f"{bot.kind}: survivors of a SIGKILL of the bot", not gone)
    assert gone, "processes of the command outlived the bot"
    assert bot.process.returncode == -signal.SIGKILL
