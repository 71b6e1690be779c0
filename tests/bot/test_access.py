"""Who may talk to the bot and have it use a tool: the rules, and the core applying them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.access import may_use_tool, refusal
from bot.clock import ManualClock
from bot.config import AccessSettings, Settings
from bot.conversation import Author, Inbound, ThreadKey
from bot.core import Core
from bot.llm.messages import ToolResult
from bot.policy_words import access_lines, tool_lines
from bot.storage.sqlite import SqliteStore
from bot.tools.builtin import builtin_tools
from bot.tools.registry import ToolRegistry
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.fakes.surface import RecordingSurface, drive

ADA = Author("slack:UADA", "Ada", frozenset({"slack:group:SENG"}))
BOB = Author("slack:UBOB", "Bob")
KEY = "slack:T1:C1:1.0"


@pytest.mark.parametrize(
    ("access", "author", "key", "dm", "refused"),
    [
        ({}, BOB, KEY, False, None),
        ({"deny_users": ["slack:UBOB"]}, BOB, KEY, False, "deny list"),
        ({"deny_roles": ["slack:group:SENG"]}, ADA, KEY, False, "deny list"),
        ({"roles": ["slack:group:SENG"]}, ADA, KEY, False, None),
        ({"roles": ["slack:group:SENG"]}, BOB, KEY, False, "not on the allow list"),
        ({"users": ["slack:UADA"], "admins": ["slack:UBOB"]}, BOB, KEY, False, None),
        ({"channels": ["slack:T1:C2"]}, BOB, KEY, False, "channel is not on the allow list"),
        ({"deny_channels": ["slack:T1:C1"]}, BOB, KEY, False, "channel is on the deny list"),
        ({"deny_channels": ["slack:T1:C1"]}, BOB, "slack:T1:D9:1.0", True, None),
        ({"dms": "closed"}, BOB, "slack:T1:D9:1.0", True, "direct messages are closed"),
        ({"dms": "allowlist"}, BOB, "slack:T1:D9:1.0", True, "only to listed people"),
        ({"dms": "allowlist", "users": ["slack:UBOB"]}, BOB, "slack:T1:D9:1.0", True, None),
        (
            {"dms": "allowlist", "admins": ["slack:UBOB"], "deny_users": ["slack:UBOB"]},
            BOB,
            KEY,
            True,
            "deny",
        ),
    ],
)
def test_who_may_talk_to_the_bot(
    access: dict[str, Any], author: Author, key: str, dm: bool, refused: str | None
) -> None:
    found = refusal(AccessSettings(**access), author, key, dm=dm)
    assert (found is None) if refused is None else (found is not None and refused in found)


def test_who_may_have_a_tool_used() -> None:
    settings = Settings(
        _env_file=None,
        tools={
            "run_command": {"roles": ["slack:group:SENG"]},
            "write_file": {"deny_users": ["slack:UADA"]},
        },
        channels={"slack:T1:C9": {"tools": {"run_command": {"users": ["slack:UBOB"]}}}},
        access={"admins": ["slack:UADM"]},
    )
    assert may_use_tool(settings, KEY, "run_command", ADA)
    assert not may_use_tool(settings, KEY, "run_command", BOB)
    assert may_use_tool(settings, KEY, "run_command", Author("slack:UADM", "Admin"))
    assert may_use_tool(settings, "slack:T1:C9:2.0", "run_command", BOB)  # the channel's list
    assert not may_use_tool(settings, KEY, "write_file", ADA)
    assert may_use_tool(settings, KEY, "read_file", BOB)
    assert not may_use_tool(settings, KEY, "run_command", None)


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
    assert "asks every time" in run and "only slack:UADA" in run and "1 listed user" in run
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
