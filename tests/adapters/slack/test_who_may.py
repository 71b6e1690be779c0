"""Who may click what on Slack, through the real slack-bolt against the fake Slack: a person
who may not use the bot cannot stop a run (by its button or by the command) nor decide an
approval, even where ``anyone`` may decide; they are told so privately and the run goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.api.commands import CANNOT
from bot.approvals.service import NOT_HERE
from bot.core import STOP_REFUSED
from tests.adapters.slack.conftest import HeldModel, World, slack_world
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.fakes.slack import MENTION, Message

WAIT = 30.0
GRACE_DENIED = {"access": {"deny_users": ["slack:UGRACE"]}}


def shown(world: World, root: Message) -> str:
    return "\n".join(m.shown for m in world.fake.replies(root.channel, root.ts))


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_stop_click_by_a_denied_person_is_refused_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    model = HeldModel(ScriptedModel([text("Working on it", " and done")]), hold_after=1)
    async with slack_world(
        tmp_path,
        monkeypatch,
        mode=mode,  # type: ignore[arg-type]
        model=model,
        **GRACE_DENIED,
    ) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} a long task")

        def with_stop() -> list[Message]:
            return [
                m
                for m in world.fake.replies("CGENERAL", root.ts)
                if any(b["text"]["text"] == "Stop" for b in m.buttons)
            ]

        await world.fake.wait_for(lambda: bool(with_stop()), WAIT)
        assert (await world.fake.click("UGRACE", with_stop()[0], "Stop")).acked_in_time
        await world.fake.wait_for(lambda: world.fake.ephemerals("UGRACE") == [STOP_REFUSED], WAIT)
        slash = await world.fake.slash("UGRACE", "CGENERAL", f"stop {_link(root)}")
        await world.fake.wait_for(lambda: bool(slash.answers), WAIT)
        assert slash.shown == [CANNOT]

        model.release()
        await world.fake.wait_for(lambda: "Working on it and done" in shown(world, root), WAIT)
        await world.idle()
        assert "Stopped by" not in shown(world, root)
        assert world.fake.ephemerals("UADA") == []


async def test_a_denied_persons_approve_does_not_approve_where_anyone_may_decide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel(
        [step(call("run_command", {"command": "echo should-not-run"})), text("As decided.")]
    )
    anyone = {"slack:T0FAKE:CGENERAL": {"approvers": {"anyone": True}}}
    async with slack_world(
        tmp_path, monkeypatch, model=model, workspace_tools=True, channels=anyone, **GRACE_DENIED
    ) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} run the echo")

        def cards() -> list[Message]:
            return [m for m in world.fake.replies("CGENERAL", root.ts) if m.buttons]

        await world.fake.wait_for(lambda: bool(cards()), WAIT)
        await world.idle()
        await world.fake.click("UGRACE", cards()[0], "Approve")
        await world.fake.wait_for(lambda: world.fake.ephemerals("UGRACE") == [NOT_HERE], WAIT)
        await world.idle()
        assert cards() and "Grace" not in cards()[0].shown  # still open, decided by nobody

        await world.fake.click("UADA", cards()[0], "Deny")
        await world.fake.wait_for(lambda: "As decided." in shown(world, root), WAIT)
        await world.idle()
        results = [m for r in world.model.requests for m in r.messages if m.role == "tool"]
        assert [m.content for m in results] == ["denied by Ada: the call was not run."]  # type: ignore[union-attr]


def _link(message: Message) -> str:
    return f"https://fake.slack.com/archives/{message.channel}/p{message.ts.replace('.', '')}"
