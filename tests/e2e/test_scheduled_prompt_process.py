"""The real program schedules a prompt: the model (a fake OpenAI server) calls
``schedule_prompt`` "in 2 seconds", and two seconds later the scheduled turn arrives in the
playground thread, attributed to the person who asked."""

from __future__ import annotations

import json
from pathlib import Path

from bot.llm.wire import from_data
from tests.e2e.test_process_restart import browser, free_port, open_page, threadline, until_event
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply


async def test_a_prompt_scheduled_in_two_seconds_arrives_in_the_thread(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    user = {"user_id": "alice", "user_name": "Alice"}
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(
            Reply(
                calls=[
                    FakeCall(
                        "schedule_prompt",
                        {"prompt": "Say the build is green", "when": "in 2 seconds"},
                    )
                ]
            ),
            Reply("I'll say it in two seconds."),
            Reply("The build is green."),
        )
        settings = {
            "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_API_KEY": "sk-test",
            "THREADLINE_TIMEZONE": "Europe/Paris",
        }
        async with threadline(tmp_path, port, **settings):
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                async with http.post(
                    f"{base}/api/messages",
                    json={
                        "text": "In 2 seconds, say the build is green",
                        "event_id": "event-sched-1",
                        **user,
                    },
                ) as resp:
                    assert resp.status == 202
                    thread_id = (await resp.json())["thread_id"]
                await until_event(ws, lambda e: "two seconds" in json.dumps(e))
                await until_event(ws, lambda e: "The build is green." in json.dumps(e))
            async with http.get(f"{base}/api/threads/{thread_id}") as resp:
                messages = (await resp.json())["messages"]
        asking, told, scheduled = fake.requests
    answer = next(m["text"] for m in messages if "The build is green." in m["text"])
    assert "⏰ Scheduled by Alice: Say the build is green" in answer
    result = from_data(told.messages[-1]["content"])
    assert result.startswith("Scheduled s1: next run ") and "(Europe/Paris) (once)." in result
    offered = {t["function"]["name"]: t["function"]["parameters"] for t in told.body["tools"]}
    assert offered["cancel_schedule"]["properties"]["schedule_id"]["enum"] == ["s1"]
    assert "cancel_schedule" not in {t["function"]["name"] for t in asking.body["tools"]}
    assert scheduled.messages[-1] == {
        "role": "user",
        "content": "[scheduled by Alice]: Say the build is green",
    }
