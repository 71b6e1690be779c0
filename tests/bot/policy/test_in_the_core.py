"""The policy as the core applies it (a refused message, a refused tool) and as
``threadline doctor`` words it."""

from __future__ import annotations

from pathlib import Path

from bot.api.inbound import Author, Inbound, ThreadKey
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import ManualClock
from bot.llm.messages import ToolResult
from bot.policy.words import access_lines, tool_lines
from bot.storage.sqlite.store import SqliteStore
from bot.tools.builtin import builtin_tools
from bot.tools.registry import ToolRegistry
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.fakes.surface import RecordingSurface, drive

ADA = Author("slack:UADA", "Ada", frozenset({"slack:group:SENG"}))
BOB = Author("slack:UBOB", "Bob")
KEY = "slack:T1:C1:1.0"


def test_the_policy_in_plain_words() -> None:
    settings = Settings(
        _env_file=None,
        access={"dms": "closed", "channels": ["slack:T1:C1"], "admins": ["slack:UADM"]},
        tools={
            "run_command": {
                "users": ["slack:UADA"],
                "approvers": {"admins": True, "requester": False},
            }
        },
        channels={"slack:T1:C1": {"tools": {"write_file": {"approval": "always"}}}},
    )
    words = [*access_lines(settings.access), *tool_lines(settings, builtin_tools(settings))]
    assert words[0] == "who can talk to the bot: everyone, in slack:T1:C1"
    assert words[1] == "direct messages: closed" and words[2] == "admins: slack:UADM"
    run = next(w for w in words if w.startswith("run_command:"))
    assert (
        "asks every time" in run
        and "only slack:UADA" in run
        and "who can approve: slack:UADM" in run
    )
    assert (
        "write_file: runs without asking; who can have it used: whoever may talk to the bot"
        in words
    )
    assert any(w.startswith("write_file in slack:T1:C1: asks every time") for w in words)


async def test_the_core_answers_only_people_allowed_and_refuses_their_tools(tmp_path: Path) -> None:
    clock = ManualClock()
    settings = Settings(
        _env_file=None,
        data_dir=tmp_path,
        access={"deny_users": ["slack:UEVE"]},
        tools={"todo_write": {"users": ["slack:UADA"]}},
    )
    model = ScriptedModel(
        [step(call("todo_write", {"todos": []})), text("no plan for you")], max_calls=2
    )
    core = Core(
        settings, SqliteStore(tmp_path / "t.sqlite3"), model, ToolRegistry(builtin_tools()), clock
    )
    await core.start()
    surface = RecordingSurface(clock)
    try:
        key = ThreadKey(KEY)
        await drive(
            clock, core.handle(Inbound(key, Author("slack:UEVE", "Eve"), "hi", "e1"), surface)
        )
        assert model.requests == [] and surface.texts() == []
        await drive(clock, core.handle(Inbound(key, BOB, "plan it", "e2"), surface))
        session = await core.store.load_session(key, clock.now())
        result = next(m for m in session.messages if isinstance(m, ToolResult))
        assert result.is_error and "Bob may not have me use todo_write" in result.content
        assert surface.texts() == ["no plan for you"]
    finally:
        await core.aclose()
