"""Per-channel settings and a thread's own model, through the real core and SQLite store: what
the model is asked with in a thread of one channel, of a more specific one, and of another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bot.api.commands import ChooseModel, run_command
from bot.api.inbound import ThreadKey
from bot.config import Settings
from bot.engine.prompt import DEFAULT_SYSTEM_PROMPT
from bot.llm.model import ModelRequest
from tests.bot.world import ALICE, BOB, World
from tests.fakes.scripted_model import call, step, text

GENERAL = "slack:T1:CGEN:100.1"
OPS = "slack:T1:COPS:200.1"
OPS_INCIDENT = "slack:T1:COPS:300.1"
ELSEWHERE = "slack:T1:COTHER:400.1"
CHANNELS: dict[str, Any] = {
    "slack:T1:COPS": {
        "model": "big-model",
        "system_prompt": "You help the on-call engineers. Be brief.",
        "hide_tools": ["remember", "forget", "recall"],
        "max_turns": 2,
        "during_run": "queue",
    },
    "slack:T1:COPS:300.1": {
        "system_prompt": "You are the incident scribe.",
        "system_prompt_mode": "replace",
        "offer_tools": ["todo_write", "dep*"],
        "models": ["big-model", "small-model"],
    },
}


def world(tmp_path: Path) -> World:
    """A core with the channel sections above and ``global-model`` as THREADLINE_MODEL."""
    w = World(tmp_path, channels=CHANNELS)
    w.core = w._core(model="global-model")
    return w


def tools_of(request: ModelRequest) -> set[str]:
    return {t.name for t in request.tools}


async def test_each_thread_is_asked_with_its_channels_settings(tmp_path: Path) -> None:
    w = world(tmp_path)
    await w.core.start()
    w.model.respond = lambda request: text("ok")
    for key in (GENERAL, OPS, OPS_INCIDENT):
        await w.say("hello", key=key)
    general, ops, incident = w.model.requests

    assert general.model is None and general.system == DEFAULT_SYSTEM_PROMPT  # THREADLINE_MODEL
    assert {"remember", "todo_write", "deploy"} <= tools_of(general)

    assert ops.model == "big-model"
    assert ops.system == f"{DEFAULT_SYSTEM_PROMPT}\n\nYou help the on-call engineers. Be brief."
    assert "remember" not in tools_of(ops) and {"todo_write", "deploy"} <= tools_of(ops)

    # the most specific section wins, field by field over the global settings (not the parent's)
    assert incident.model is None
    assert incident.system == "You are the incident scribe."
    assert tools_of(incident) == {"todo_write", "deploy"}
    await w.core.aclose()


async def test_a_channels_turn_limit_holds_and_a_tool_it_hides_cannot_be_called(
    tmp_path: Path,
) -> None:
    w = World(tmp_path, channels=CHANNELS)
    await w.core.start()
    w.model.steps.extend(
        [
            step(call("remember", {"note": "x", "scope": "thread"})),
            step(call("todo_write", {"todos": [{"content": "look"}]})),
            text("Where things stand: one step left."),
        ]
    )
    await w.say("go", key=OPS)
    results = await w.results(OPS)
    assert results[0].is_error and "no tool named 'remember'" in results[0].content
    assert "remember" not in results[0].content.split("Available tools:")[1]
    assert len(w.model.requests) == 3  # max_turns 2, then the answer without tools
    assert w.model.requests[-1].tools == []
    await w.core.aclose()


async def test_model_command_changes_one_thread_only_and_outlives_a_restart(tmp_path: Path) -> None:
    w = world(tmp_path)
    await w.core.start()
    w.model.respond = lambda request: text("ok")

    async def model(key: str, name: str = "") -> str:
        return await run_command(w.core, ChooseModel(name), ThreadKey(key), w.thread(key), ALICE)

    assert await model(OPS) == 'Model here: big-model (set for channel "slack:T1:COPS").'
    assert (
        await model(OPS, "tiny-model")
        == "This thread now uses tiny-model; other threads are unchanged."
    )
    assert await model(OPS_INCIDENT, "tiny-model") == (
        "Nothing changed: 'tiny-model' is not among the models this bot may use here. Choices: big-model, small-model."
    )
    assert await model(OPS, "bad\x00name") == (
        "Nothing changed: 'bad\\x00name' is not a model name (1-200 characters without spaces)"
    )

    await w.restart()
    w.model.respond = lambda request: text("ok")
    await w.say("hello", key=OPS)
    await w.say("hello", key=OPS_INCIDENT)
    assert [r.model for r in w.model.requests] == ["tiny-model", None]
    status = await w.core.describe(ThreadKey(OPS))
    assert "Model: tiny-model (chosen for this thread)" in status

    assert (
        await model(OPS, "default")
        == 'This thread now uses big-model (set for channel "slack:T1:COPS").'
    )
    await w.say("again", key=OPS)
    assert w.model.requests[-1].model == "big-model"
    await w.core.aclose()


def test_during_run_and_limits_come_from_the_most_specific_section(tmp_path: Path) -> None:
    w = World(tmp_path, channels=CHANNELS)
    assert w.core.channels.during_run(OPS) == "queue"
    assert w.core.channels.during_run(ELSEWHERE) == "steer"
    assert w.core.channels.config(OPS).max_turns == 2
    assert w.core.channels.config(OPS_INCIDENT).max_turns == 25  # its own section sets none


async def test_someone_the_access_policy_refuses_gets_no_command(tmp_path: Path) -> None:
    w = World(tmp_path, access={"deny_users": [BOB.id]})
    await w.core.start()
    said = await run_command(w.core, ChooseModel("x"), ThreadKey(GENERAL), w.thread(GENERAL), BOB)
    assert said == "You can't use Threadline here."
    session = await w.core.store.load_session(ThreadKey(GENERAL), 0)
    assert session.model is None
    await w.core.aclose()


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ({"offer_tools": ["run command"]}, "is not a tool name"),
        ({"model": "has space"}, "is not a model name"),
        ({"system_prompt_mode": "append"}, "'add' or 'replace'"),
        ({"max_turns": 0}, "greater than or equal to 1"),
        ({"modle": "x"}, "Extra inputs are not permitted"),
    ],
)
def test_a_mistaken_channel_section_is_refused_with_its_reason(
    tmp_path: Path, section: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem):
        Settings(data_dir=tmp_path, channels={"slack:T1:C1": section})
