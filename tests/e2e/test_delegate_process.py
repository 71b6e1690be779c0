"""The real program with a sub-agent at work: ``threadline run`` on the playground, a fake OpenAI
server scripting the model (the parent's ``delegate_task`` call, then the sub-agent's calls), and
a person talking and clicking through the playground's HTTP API. The sub-agent's ``write_file``
asks for approval (``[tools.write_file] approval = "ask"``): approved, the file is written and
the answer comes; killed while the card waits, the restarted program closes the card, answers
the ``delegate_task`` call as interrupted and never writes the file."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import aiohttp

from tests.e2e.test_process_restart import (
    browser,
    card_in,
    card_recorded,
    free_port,
    open_page,
    threadline,
    until_event,
    until_true,
)
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply

USER = {"user_id": "alice", "user_name": "Alice"}
TOML = '[tools.write_file]\napproval = "ask"\n'
TASK = {"task": "Write notes.txt saying hello.", "tools": ["write_file"]}
WRITE = {"path": "notes.txt", "content": "hello from the sub-agent"}


async def say(http: aiohttp.ClientSession, base: str, text: str) -> str:
    body = {"text": text, "event_id": "event-delegate-1", **USER}
    async with http.post(f"{base}/api/messages", json=body) as resp:
        assert resp.status == 202, await resp.text()
        thread_id: str = (await resp.json())["thread_id"]
        return thread_id


async def click(
    http: aiohttp.ClientSession, base: str, thread_id: str, card: dict[str, Any]
) -> str:
    action = next(b for b in card["buttons"] if b["label"] == "Approve")["action_id"]
    async with http.post(
        f"{base}/api/actions", json={"thread_id": thread_id, "action_id": action, **USER}
    ) as resp:
        note: str = (await resp.json())["note"]
        return note


async def thread_messages(
    http: aiohttp.ClientSession, base: str, thread_id: str
) -> list[dict[str, Any]]:
    async with http.get(f"{base}/api/threads/{thread_id}") as resp:
        found: list[dict[str, Any]] = (await resp.json())["messages"]
        return found


def written(data: Path) -> list[Path]:
    return list(data.rglob("notes.txt"))


async def test_a_sub_agent_asks_in_the_thread_and_its_answer_arrives(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text(TOML)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(
            Reply(calls=[FakeCall("delegate_task", TASK)]),
            Reply(calls=[FakeCall("write_file", WRITE)]),
            Reply("I wrote notes.txt."),
            Reply("Done: notes.txt says hello."),
        )
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        async with threadline(tmp_path, port, **env):
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                thread_id = await say(http, base, "Leave a note")
                card = (await until_event(ws, card_in))["message"]
                assert "write_file" in card["text"] and "notes.txt" in card["text"]
                assert written(tmp_path / "data") == []
                assert await click(http, base, thread_id, card) == "Approved."
                await until_event(ws, lambda e: "Done: notes.txt says hello." in json.dumps(e))
            messages = await thread_messages(http, base, thread_id)
    [notes] = written(tmp_path / "data")
    assert notes.read_text() == WRITE["content"]
    decided = next(m for m in messages if m["id"] == card["id"])
    assert "Approved" in decided["text"] and decided["buttons"] == []
    shown = "\n".join(m["text"] for m in messages)
    assert "delegate_task" in shown and shown.rstrip().endswith("Done: notes.txt says hello.")
    sub = fake.requests[1].body
    assert [t["function"]["name"] for t in sub["tools"]] == ["write_file"]


async def test_a_kill_mid_delegation_closes_its_card_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text(TOML)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    data = tmp_path / "data"
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(
            Reply(calls=[FakeCall("delegate_task", TASK)]),
            Reply(calls=[FakeCall("write_file", WRITE)]),
            Reply("A restart cut my sub-agent off; nothing was written. Ask again to retry."),
        )
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        async with threadline(tmp_path, port, **env) as first:
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                thread_id = await say(http, base, "Leave a note")
                card = (await until_event(ws, card_in))["message"]
            await until_true(lambda: card_recorded(data / "threadline.sqlite3", card["id"]))
            first.send_signal(signal.SIGKILL)  # while the sub-agent waits for the click
            await first.wait()
        async with (
            threadline(tmp_path, port, **env),
            http.ws_connect(f"{base}/api/ws?client=t") as ws,
        ):
            if "nothing was written" not in json.dumps(
                await thread_messages(http, base, thread_id)
            ):
                await until_event(ws, lambda e: "nothing was written" in json.dumps(e))
            assert (
                await click(http, base, thread_id, card)
                == "This request has already expired; nothing was run."
            )
            messages = await thread_messages(http, base, thread_id)
        assert len(fake.requests) == 3  # the sub-agent was not started again
        resumed = fake.requests[2].body["messages"]
    closed = next(m for m in messages if m["id"] == card["id"])
    assert "cut off by a restart" in closed["text"] and closed["buttons"] == []
    assert not [m for m in messages if m["buttons"]]  # no second card, no Stop button left
    tool_said = [m for m in resumed if m["role"] == "tool"]
    assert len(tool_said) == 1 and "interrupted" in json.dumps(tool_said[0])
    assert written(data) == []  # the sub-agent's side effect never ran
