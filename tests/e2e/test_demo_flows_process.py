"""Each demo flow the README and the playground page describe, in the real program: ``threadline
run`` with nothing configured (the playground on the offline demo model), driven through the
playground's HTTP API as the page drives it. Each test reads the whole thread as a person sees
it (the pinned plan, every message, its buttons and files, the notes for them alone) and
compares it with what the docs promise, word for word; only clock times and the date ``date``
prints are put in brackets."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.e2e.test_process_restart import WAIT, browser, free_port, open_page, threadline
from tests.fakes.documents import CSV

pytestmark = pytest.mark.timeout(120)

_TIMES = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC")
_DATE = re.compile(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \w+ \d{4}$", re.M)


@dataclass
class Person:
    """Ada at the playground's page: she writes, clicks and reads threads."""

    http: aiohttp.ClientSession
    base: str
    ws: aiohttp.ClientWebSocketResponse
    """The page's live connection: each change on it is a moment to read the thread again."""
    notes: dict[str, list[str]] = field(default_factory=dict)

    async def say(self, text: str, thread_id: str | None = None, **files: bytes) -> str:
        event_id = uuid.uuid4().hex
        fields = {"text": text, "event_id": event_id, "user_name": "Ada"}
        if thread_id is not None:
            fields["thread_id"] = thread_id
        if files:
            form = aiohttp.FormData(fields)
            for name, data in files.items():
                form.add_field("file", data, filename=name.replace("_", "."))
            post = self.http.post(f"{self.base}/api/messages", data=form)
        else:
            post = self.http.post(f"{self.base}/api/messages", json=fields)
        async with post as response:
            body: dict[str, Any] = await response.json()
            assert response.status in (200, 202), body
        if response.status == 200:  # a /threadline command: a note for her alone
            self.notes.setdefault(str(thread_id), []).append(body["note"])
        return str(body["thread_id"])

    async def click(self, thread_id: str, label: str) -> None:
        ((message_id, action),) = [
            (m["id"], b["action_id"])
            for m in (await self.thread(thread_id))["messages"]
            for b in m["buttons"]
            if b["label"] == label
        ]
        body = {
            "thread_id": thread_id,
            "action_id": action,
            "user_name": "Ada",
            "client_id": "page",
            "message_id": message_id,  # as the page says which message's button it was
        }
        async with self.http.post(f"{self.base}/api/actions", json=body) as response:
            assert response.status in (200, 202), await response.text()

    async def thread(self, thread_id: str) -> dict[str, Any]:
        async with self.http.get(f"{self.base}/api/threads/{thread_id}") as response:
            assert response.status == 200
            body: dict[str, Any] = await response.json()
            return body

    async def sees(self, thread_id: str) -> str:
        """The thread as the page shows it."""
        shown = await self.thread(thread_id)
        by_id = {m["id"]: m for m in shown["messages"]}
        lines = [f"📌 {by_id[pin]['text']}" for pin in shown["pins"]]
        for message in shown["messages"]:
            lines.append(f"{message['author_name']}: {message['text']}")
            lines.extend(f"  [file {f['name']}]" for f in message["files"])
            if message["buttons"]:
                lines.append("  " + " ".join(f"[{b['label']}]" for b in message["buttons"]))
        lines.extend(f"(only you) {note}" for note in self.notes.get(thread_id, []))
        if shown["status"]:
            lines.append(f"(Threadline is {shown['status']})")
        return _DATE.sub("[date]", _TIMES.sub("[time]", "\n".join(lines)))

    async def until(self, thread_id: str, done: Callable[[str], bool]) -> str:
        """What the thread shows once ``done`` says so, read again after each change."""
        seen = await self.sees(thread_id)
        async with asyncio.timeout(WAIT):
            while not done(seen):
                await self.ws.receive()
                seen = await self.sees(thread_id)
        return seen

    async def until_shown(self, thread_id: str, expected: str) -> None:
        """Wait until the thread shows ``expected`` (compared in full when the wait is up)."""
        try:
            seen = await self.until(thread_id, lambda shown: shown == expected)
        except TimeoutError:
            seen = await self.sees(thread_id)
        assert seen == expected, f"the thread shows:\n{seen}\n\nand not:\n{expected}"


@asynccontextmanager
async def ada(tmp_path: Path, **settings: str) -> AsyncIterator[Person]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with browser() as http, threadline(tmp_path, port, **settings):
        await open_page(http, base)
        async with http.ws_connect(f"{base}/api/ws?client=page") as ws:
            yield Person(http, base, ws)


ENDS = (
    "That's where my script ends: I'm the **offline demo model**. To use a real model, set "
    "`OPENAI_API_KEY` or `OPENAI_BASE_URL` and restart."
)
REAL_MODEL = """To use a real model, set `OPENAI_API_KEY` (OpenAI) or `OPENAI_BASE_URL` (any OpenAI-compatible server) and restart:

```sh
export OPENAI_API_KEY=sk-...
# or, for a local server such as Ollama:
export OPENAI_BASE_URL=http://localhost:11434/v1
export THREADLINE_MODEL=llama3.1
```"""
EXAMPLES = "“run ls”, “create a file called notes.md” or “make a plan for a team lunch”"
CANNOT = f"""I'm the **offline demo model**, so I can't really answer that. I can show what a run looks like, though: ask me to do something, like {EXAMPLES}.

- the reply streams in as it is written
- the plan is pinned at the top of the thread while work goes on
- tool calls run between model calls, and commands ask for approval first

{REAL_MODEL}"""


def card(command: str, decided: str = "") -> str:
    """An approval card for ``command``: waiting, or as ``decided`` (``✅ **Approved**``…)."""
    call = f'```json\n{{\n  "command": "{command}",\n  "timeout_s": 10\n}}\n```'
    if not decided:
        return (
            f"Threadline: 🔐 **Approval needed** to run `run_command`\n{call}\n"
            "Asked by Ada. Who can decide: the person who asked. Expires at [time].\n"
            "  [Approve] [Deny]"
        )
    return f"Threadline: {decided} by Ada: `run_command`\n{call}\nAsked by Ada; decided at [time]."


def plan(*items: str, head: str) -> str:
    return "\n".join([f"**Plan** · {head}", *items])


SMALL_TALK = [
    (
        "Hello!",
        "Ada: Hello!\n"
        f"Threadline: Hello, Ada! 👋 I'm Threadline, running on the offline demo model. Ask me "
        f"to do something, like {EXAMPLES}, to see a plan and a tool at work.",
    ),
    (
        "Who are you?",
        "Ada: Who are you?\n"
        "Threadline: I'm Threadline, an assistant that lives in chat threads. Right now I run on "
        "the **offline demo model**, which follows a short script: ask me to do something, like "
        f"{EXAMPLES}, to see plans, tools and approvals. To connect a real model, set "
        "`OPENAI_API_KEY` or `OPENAI_BASE_URL` and restart.",
    ),
    (
        "How do I cut a release?",
        "Ada: How do I cut a release?\n"
        f"Threadline: Thanks, Ada! You wrote:\n\n> How do I cut a release?\n\n{CANNOT}",
    ),
]


async def test_small_talk_and_questions_get_one_plain_answer(tmp_path: Path) -> None:
    async with ada(tmp_path) as person:
        for said, shown in SMALL_TALK:
            await person.until_shown(await person.say(said), shown)


async def test_run_ls_approved_then_denied(tmp_path: Path) -> None:
    """The docs' first flow: a plan pinned while the card waits; Approve runs the command and
    the answer says once what it did; Deny cancels that step and says so once."""
    asked = "Threadline: I'll run `ls` in my workspace. Commands ask for your approval first."
    async with ada(tmp_path) as person:
        thread_id = await person.say("Run ls")
        waiting = ("Read the request", "▶ Run `ls` in my workspace", "☐ Say what happened")
        pinned = plan("✅ " + waiting[0], *waiting[1:], head="1/3 done")
        await person.until_shown(
            thread_id,
            f"📌 {pinned}\nAda: Run ls\nThreadline: {pinned}\n{asked}\n{card('ls')}",
        )
        await person.click(thread_id, "Approve")
        done = plan(
            "✅ Read the request",
            "✅ Run `ls` in my workspace",
            "✅ Say what happened",
            head="3/3 done",
        )
        await person.until_shown(
            thread_id,
            f"Ada: Run ls\nThreadline: {done}\n{asked}\n"
            f"{card('ls', '✅ **Approved**')}\n▶ Ran: exit code 0\n"
            f"Threadline: The command ran in my workspace (exit code 0) and printed nothing."
            f"\n\n{ENDS}",
        )
        await person.say("/threadline status", thread_id)
        status = (await person.sees(thread_id)).rsplit("(only you) ", 1)[1]
        assert status.startswith("Model: demo model (offline)\nState: ")
        assert status.endswith("Todos: 3 of 3 done")

        thread_id = await person.say("Run ls")
        await person.until_shown(
            thread_id,
            f"📌 {pinned}\nAda: Run ls\nThreadline: {pinned}\n{asked}\n{card('ls')}",
        )
        await person.click(thread_id, "Deny")
        cancelled = plan(
            "✅ Read the request",
            "✖️ Run `ls` in my workspace",
            "✅ Say what happened",
            head="2/3 done, 1 cancelled",
        )
        await person.until_shown(
            thread_id,
            f"Ada: Run ls\nThreadline: {cancelled}\n{asked}\n{card('ls', '❌ **Denied**')}\n"
            f"Threadline: You denied it, so nothing was run.\n\n{ENDS}",
        )


async def test_a_file_a_plan_it_cannot_make_and_files_shared(tmp_path: Path) -> None:
    async with ada(tmp_path) as person:
        thread_id = await person.say("Create a file called notes.md")
        await person.until_shown(
            thread_id,
            "Ada: Create a file called notes.md\nThreadline: "
            + plan(
                "✅ Read the request",
                "✅ Write notes.md in my workspace",
                "✅ Say what happened",
                head="3/3 done",
            )
            + "\nThreadline: I'll write notes.md in my workspace.\n\n"
            "▸ `write_file` · Wrote 76 bytes to notes.md.\n\n"
            "notes.md is in my workspace now. Ask me to run `cat notes.md` to see it.\n\n" + ENDS,
        )

        lunch = "Make a plan for a team lunch"
        thread_id = await person.say(lunch)
        showing = (
            "Threadline: I'm the offline demo model, so I can't make a plan for a team lunch for "
            "real. I can show you a command at work, though: `date` prints today's date. "
            "Commands ask for your approval first."
        )
        pinned = plan(
            "✅ Read the request",
            "▶ Show a command at work: `date`",
            "☐ Say what happened",
            head="1/3 done",
        )
        await person.until_shown(
            thread_id, f"📌 {pinned}\nAda: {lunch}\nThreadline: {pinned}\n{showing}\n{card('date')}"
        )
        await person.click(thread_id, "Approve")
        done = plan(
            "✅ Read the request",
            "✅ Show a command at work: `date`",
            "✅ Say what happened",
            head="3/3 done",
        )
        await person.until_shown(
            thread_id,
            f"Ada: {lunch}\nThreadline: {done}\n{showing}\n"
            f"{card('date', '✅ **Approved**')}\n"
            "▶ Ran: exit code 0, 1 line of output\n```\n[date]\n```\n"
            "Threadline: The command ran in my workspace (exit code 0) and printed:\n\n"
            f"```\n[date]\n```\n\n{ENDS}",
        )

        thread_id = await person.say("", cities_csv=CSV)
        await person.until_shown(
            thread_id,
            "Ada: \n  [file cities.csv]\n"
            "Threadline: Thanks, Ada! I've saved `cities.csv` in my workspace, but I can't read "
            "it for you. I'm the **offline demo model**; a real model reads shared files with "
            f"its tools and answers questions about them.\n\n{REAL_MODEL}",
        )
        thread_id = await person.say("Which is largest?", cities_csv=CSV, notes_txt=b"hi\n")
        await person.until_shown(
            thread_id,
            "Ada: Which is largest?\n  [file cities.csv]\n  [file notes.txt]\n"
            "Threadline: Thanks, Ada! You wrote:\n\n> Which is largest?\n\n"
            "I've saved `cities.csv` and `notes.txt` in my workspace, but I can't read them for "
            f"you. {CANNOT}",
        )


async def test_stop_while_it_writes(tmp_path: Path) -> None:
    """Stop, clicked while the reply streams: the words so far, who stopped it, and the plan
    no longer pinned, its open steps cancelled."""
    async with ada(tmp_path, THREADLINE_DEMO_CHUNK_DELAY_S="0.3") as person:
        thread_id = await person.say("Run ls")
        await person.until(thread_id, lambda shown: "[Stop]" in shown and "I'll" in shown)
        await person.click(thread_id, "Stop")
        stopped = plan(
            "✅ Read the request",
            "✖️ Run `ls` in my workspace",
            "✖️ Say what happened",
            head="1/3 done, 2 cancelled",
        )
        whole = "I'll run `ls` in my workspace. Commands ask for your approval first."
        await person.until(
            thread_id, lambda shown: "_Stopped by Ada._" in shown and "📌" not in shown
        )
        messages = (await person.thread(thread_id))["messages"]
        texts = [m["text"] for m in messages]
        (reply,) = [t for t in texts if t.endswith("\n\n_Stopped by Ada._")]
        words = reply.removesuffix("\n\n_Stopped by Ada._")
        assert words and whole.startswith(words.rstrip()), words
        # the reply (shown with Stop from the run's first second) and the plan, in the order
        # they were posted, with no button left
        assert texts[0] == "Run ls" and sorted(texts[1:]) == sorted([stopped, reply]), texts
        assert not any(m["buttons"] for m in messages)
