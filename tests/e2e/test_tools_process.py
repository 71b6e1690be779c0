"""The real program with the tools of issue 13 configured: ``threadline run`` with a fake OpenAI
server scripting the model's calls, a small web site on loopback, and a person talking through
the playground's HTTP API — ``fetch_url`` with its per-origin "Always allow", custom tools (a
program in the sandbox, an HTTP request with a secret), and a skill the model loads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp

from bot.llm.wire import as_data, from_data
from tests.bot.tools.test_skills import RELEASE, write_skill
from tests.e2e.test_process_restart import (
    browser,
    card_in,
    free_port,
    open_page,
    threadline,
    until_event,
)
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply
from tests.fakes.web_server import FakeWeb
from tests.sandboxing import sandbox_runner

USER = {"user_id": "alice", "user_name": "Alice"}
SECRET = "tickets-s3cret-4c2f9a"


class Thread:
    """One playground thread of Alice's, and the page's event stream."""

    def __init__(
        self, http: aiohttp.ClientSession, base: str, ws: aiohttp.ClientWebSocketResponse
    ) -> None:
        self.http, self.base, self.ws = http, base, ws
        self.id: str | None = None
        self._n = 0

    async def say(self, text: str) -> None:
        self._n += 1
        body = {
            "text": text,
            "event_id": f"event-tools-{self._n}",
            **USER,
            **({"thread_id": self.id} if self.id else {}),
        }
        async with self.http.post(f"{self.base}/api/messages", json=body) as resp:
            assert resp.status == 202, await resp.text()
            self.id = (await resp.json())["thread_id"]

    async def card(self) -> dict[str, Any]:
        found: dict[str, Any] = (await until_event(self.ws, card_in))["message"]
        return found

    async def click(self, card: dict[str, Any], label: str) -> str:
        action = next(b for b in card["buttons"] if b["label"] == label)["action_id"]
        async with self.http.post(
            f"{self.base}/api/actions", json={"thread_id": self.id, "action_id": action, **USER}
        ) as resp:
            note: str = (await resp.json())["note"]
            return note

    async def shows(self, words: str) -> None:
        await until_event(self.ws, lambda e: e.get("type") == "message" and words in json.dumps(e))


def last_result(request: Any) -> str:
    return from_data(request.messages[-1]["content"])


async def test_fetch_url_asks_per_domain_and_reads_the_page(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text("[tools.fetch_url]\nallow_private = true\n")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with FakeWeb() as site, FakeOpenAI() as fake, browser() as http:
        page = f"http://localhost:{site.port}"
        fake.push(
            Reply(calls=[FakeCall("fetch_url", {"url": f"{page}/article"})]),
            Reply("Twice a day."),
            Reply(calls=[FakeCall("fetch_url", {"url": f"{page}/data.json"})]),
            Reply("6.9 m at high water."),
        )
        async with threadline(
            tmp_path, port, OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test"
        ):
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                thread = Thread(http, base, ws)
                await thread.say("When is high water in Brest?")
                card = await thread.card()
                assert f"{page}/article" in card["text"] and site.hits["/article"] == 0
                label = f"Always allow {page} for Alice here"
                assert await thread.click(card, label) == "Approved."
                await thread.shows("Twice a day.")
                await thread.say("And how high?")  # the same origin: no card this time
                await thread.shows("6.9 m at high water.")
        first, second, _, fourth = fake.requests
    assert "fetch_url" in {t["function"]["name"] for t in first.body["tools"]}
    assert second.messages[-1]["content"].startswith('<tool_output tool="fetch_url">')
    assert "High water at Brest comes twice a day" in last_result(second)
    assert '"height_m": 6.9' in last_result(fourth) and site.hits["/data.json"] == 1


async def test_custom_tools_run_sandboxed_and_keep_their_secret(tmp_path: Path) -> None:
    sandbox_runner()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with FakeWeb() as site, FakeOpenAI() as fake, browser() as http:
        (tmp_path / "threadline.toml").write_text(
            '[custom_tools.shout]\ndescription = "Print words in brackets."\n'
            'command = ["printf", "[%s]", "{words}"]\nparameters.words = { description = "What to print." }\n'
            '[custom_tools.ticket]\ndescription = "Look a ticket up."\n'
            f'http = {{ url = "{site.base}/echo/tickets/{{id}}", headers = {{ Authorization = "Bearer ${{TICKETS_TOKEN}}" }} }}\n'
            'parameters.id = { type = "integer" }\n[tools.ticket]\napproval = "never"\n'
        )
        words = "; rm -rf / ; echo $HOME"
        fake.push(
            Reply(calls=[FakeCall("shout", {"words": words})]),
            Reply("Printed."),
            Reply(calls=[FakeCall("ticket", {"id": 42})]),
            Reply("Ticket 42 is there."),
        )
        env = {
            "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_API_KEY": "sk-test",
            "TICKETS_TOKEN": SECRET,
        }
        async with threadline(tmp_path, port, **env) as proc:
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                thread = Thread(http, base, ws)
                await thread.say("Shout something odd")
                card = await thread.card()
                assert [b["label"] for b in card["buttons"]] == [
                    "Approve",
                    "Deny",
                ]  # no Always for programs
                await thread.click(card, "Approve")
                await thread.shows("Printed.")
                await thread.say("Look up ticket 42")
                await thread.shows("Ticket 42 is there.")
            proc.terminate()
            assert proc.stdout is not None
            logged = (await proc.stdout.read()).decode()
        requests = fake.requests
    offered = {t["function"]["name"]: t["function"] for t in requests[0].body["tools"]}
    assert offered["shout"]["parameters"]["required"] == ["words"]
    assert last_result(requests[1]) == f"[{words}]\n[exit code 0]"
    seen = json.loads(last_result(requests[3]).split("\n\n", 1)[1])
    assert seen["path"] == "/echo/tickets/42" and seen["authorization"] == "Bearer [redacted]"
    assert site.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"  # type: ignore[index]
    assert all(SECRET not in json.dumps(r.body) for r in requests) and SECRET not in logged


async def test_the_model_loads_a_skill_that_stays_in_its_system_prompt(tmp_path: Path) -> None:
    write_skill(
        tmp_path / "data" / "skills", "release", RELEASE, description="How we cut a release."
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(
            Reply(calls=[FakeCall("load_skill", {"name": "release"})]),
            Reply("First, bump the version."),
            Reply("Then the changelog."),
        )
        async with threadline(
            tmp_path, port, OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test"
        ):
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                thread = Thread(http, base, ws)
                await thread.say("Let's cut a release")
                await thread.shows("First, bump the version.")
                await thread.say("What next?")
                await thread.shows("Then the changelog.")
        first, second, third = fake.requests
    load = next(t["function"] for t in first.body["tools"] if t["function"]["name"] == "load_skill")
    assert load["parameters"]["properties"]["name"]["enum"] == ["release"]
    assert "- release: How we cut a release." in load["description"]
    assert second.messages[-1]["content"] == as_data(
        "load_skill",
        "Loaded the skill release (65 bytes). Its instructions are now part of the system prompt.",
    )
    assert RELEASE in third.messages[0]["content"]  # the system prompt, a turn later
    assert "load_skill" not in {
        t["function"]["name"] for t in third.body["tools"]
    }  # nothing left to load
