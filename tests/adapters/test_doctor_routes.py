"""``threadline doctor`` on model routes and fallbacks: where each model is asked, with which
key (named, never shown), and whether it answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.adapters.test_cli import threadline
from tests.fakes.openai_server import FakeOpenAI, Fault, Reply

LOCAL_KEY = "sk-local-doctor-5555SECRET"
DEFAULT_KEY = "sk-default-doctor-7777SECRET"


async def test_doctor_asks_each_route_and_fallback(tmp_path: Path) -> None:
    async with FakeOpenAI() as default, FakeOpenAI() as local:
        default.push(Reply("OK"), Fault.unknown_model("gpt-4.1"))
        local.push(Reply("OK"))
        (tmp_path / "threadline.toml").write_text(
            f'[per_model."llama3.1"]\nbase_url = "{local.base_url}"\napi_key_env = "LOCAL_KEY"\n'
        )
        env = {
            "OPENAI_API_KEY": DEFAULT_KEY,
            "OPENAI_BASE_URL": default.base_url,
            "THREADLINE_MODEL": "gpt-4o",
            "THREADLINE_FALLBACK_MODELS": "llama3.1,gpt-4.1",
            "THREADLINE_MODEL_MAX_RETRIES": "0",
            "LOCAL_KEY": LOCAL_KEY,
        }
        out = await asyncio.to_thread(threadline, "doctor", cwd=tmp_path, env=env)
    lines = out.stdout.splitlines()
    assert (
        "[--  ] fallbacks: when a thread's model has no quota, fails or cannot be reached, "
        "llama3.1 then gpt-4.1 (THREADLINE_FALLBACK_MODELS)" in lines
    )
    assert (
        f'[ok  ] model llama3.1 at {local.base_url} (per_model."llama3.1".base_url) with the key '
        "in LOCAL_KEY over Chat Completions answered (2 characters)" in lines
    )
    failed = next(line for line in lines if "gpt-4.1 on the default server" in line)
    assert failed.startswith("[FAIL] model gpt-4.1 on the default server: ")
    assert "does not know the model 'gpt-4.1'" in failed
    assert local.requests[0].headers["Authorization"] == f"Bearer {LOCAL_KEY}"
    assert [r.body["model"] for r in default.requests] == ["gpt-4o", "gpt-4.1"]
    shown = out.stdout + out.stderr
    assert LOCAL_KEY not in shown and DEFAULT_KEY not in shown
    assert (
        "[--  ] model API: Chat Completions (/chat/completions) (THREADLINE_OPENAI_API=chat)"
        in lines
    )
    assert out.returncode == 1
