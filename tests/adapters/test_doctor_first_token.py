"""``threadline doctor`` on the first-token timeout: how soon the model began against it, a
model server that sends nothing failed with the setting named, and a value that cannot be used
refused."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tests.adapters.test_cli import ROOT, threadline
from tests.fakes.openai_server import FakeOpenAI, Hang, Reply

SETTING = "THREADLINE_MODEL_FIRST_TOKEN_TIMEOUT_S"


async def doctor(tmp_path: Path, env: dict[str, str]) -> tuple[int, str]:
    """``threadline doctor`` run beside the fake model server (both on this event loop)."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("THREADLINE_", "OPENAI_", "SLACK_", "DISCORD_"))
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        "doctor",
        cwd=tmp_path,
        env=clean | env | {"PYTHONPATH": str(ROOT), "THREADLINE_DATA_DIR": str(tmp_path / "d")},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    async with asyncio.timeout(60):
        out, _ = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_doctor_says_how_soon_the_model_began(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        fake.push(Reply("OK"))
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        code, out = await doctor(tmp_path, env)
    assert code == 0, out
    line = next(x for x in out.splitlines() if "its answer began after" in x)
    assert line.startswith("[ok  ] model: its answer began after ")
    assert f"nothing for 60 s ends with a note ({SETTING})" in line


async def test_doctor_fails_a_model_server_that_sends_nothing(tmp_path: Path) -> None:
    silent = asyncio.Event()
    async with FakeOpenAI() as fake:
        fake.push(Hang(silent, "token"))
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test", SETTING: "0.5"}
        try:
            code, out = await doctor(tmp_path, env)
        finally:
            silent.set()
    assert code == 1, out
    failed = [x for x in out.splitlines() if x.startswith("[FAIL]")]
    assert len(failed) == 1 and "sent nothing for 0.5 s" in failed[0] and SETTING in failed[0]


def test_a_first_token_timeout_that_cannot_be_used_is_refused(tmp_path: Path) -> None:
    for bad in ("0", "-5", "soon"):
        out = threadline("doctor", env={SETTING: bad}, cwd=tmp_path)
        assert out.returncode == 2, out.stdout + out.stderr
        assert f"invalid configuration: {SETTING}" in out.stderr
        assert "Traceback" not in out.stderr
