"""The real program with a fallback model on a server of its own: ``threadline run`` whose
model answers 503 and whose fallback, on a second fake OpenAI server with its own key, answers;
the thread says which model answered, and neither key reaches the logs."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_process_restart import (
    browser,
    free_port,
    open_page,
    threadline,
    until_event,
)
from tests.e2e.test_tools_process import Thread
from tests.fakes.openai_server import FakeOpenAI, Fault, Reply

DEFAULT_KEY = "sk-default-e2e-1111SECRET"
LOCAL_KEY = "sk-local-e2e-2222SECRET"
ANSWER = "High water in Brest is at 14:32."
NOTICE = "gpt-4o did not answer (server error 503); answered by llama3.1"


async def test_a_failing_model_hands_the_answer_to_its_fallback(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with FakeOpenAI() as openai, FakeOpenAI() as local, browser() as http:
        openai.push(Fault.server_error(503), Fault.server_error(503))
        local.push(Reply(ANSWER))
        (tmp_path / "threadline.toml").write_text(
            f'fallback_models = ["llama3.1"]\n\n[per_model."llama3.1"]\n'
            f'base_url = "{local.base_url}"\napi_key_env = "LOCAL_MODEL_KEY"\n'
        )
        env = {
            "OPENAI_BASE_URL": openai.base_url,
            "OPENAI_API_KEY": DEFAULT_KEY,
            "LOCAL_MODEL_KEY": LOCAL_KEY,
            "THREADLINE_MODEL": "gpt-4o",
            "THREADLINE_MODEL_MAX_RETRIES": "1",
        }
        async with threadline(tmp_path, port, **env) as proc:
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                thread = Thread(http, base, ws)
                await thread.say("When is high water in Brest?")
                shown = await until_event(ws, lambda e: ANSWER in json.dumps(e))
            assert NOTICE in shown["message"]["text"]
            proc.terminate()
            assert proc.stdout is not None
            logs = (await proc.stdout.read()).decode()
    assert len(openai.requests) == 2  # the first try and its retry
    assert local.requests[0].body["model"] == "llama3.1"
    assert local.requests[0].headers["Authorization"] == f"Bearer {LOCAL_KEY}"
    assert "did not answer" in logs
    assert DEFAULT_KEY not in logs and LOCAL_KEY not in logs
