"""Buttons (clicks routed to the core, notes shown to the clicker alone, across restarts) and
the todo panel (pinned while work is open, unpinned when done)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.slack.parse import thread_key
from bot.api.surface import Button
from tests.adapters.slack.conftest import World, slack_world
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.fakes.slack import MENTION, FakeSlack, Message
from tests.fakes.slack.server import ALL_SCOPES

NOT_ACTIVE = "This button is no longer active."
BUTTONS = [
    Button("demo:yes:abc123", "Approve", "primary"),
    Button("demo:no:abc123", "Deny", "danger"),
    Button("demo:later:abc123", "Later"),
]
"""Action ids the core does not know: it answers every click with ``NOT_ACTIVE``."""


async def card(world: World, root: Message) -> Message:
    """A message with buttons in the thread, posted through the adapter's surface."""
    surface = world.adapter.surface(thread_key("T0FAKE", root.channel, root.ts))
    ts = await surface.post(surface.render("Run `rm -rf build`?"), BUTTONS)
    found = world.fake.workspace.find(root.channel, ts)
    assert found is not None
    return found


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_click_reaches_the_core_and_only_the_clicker_sees_the_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    async with slack_world(tmp_path, monkeypatch, mode=mode) as world:  # type: ignore[arg-type]
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} start")
        await world.answered(root)
        message = await card(world, root)
        assert [(b["text"]["text"], b.get("style"), b["value"]) for b in message.buttons] == [
            ("Approve", "primary", "demo:yes:abc123"),
            ("Deny", "danger", "demo:no:abc123"),
            ("Later", None, "demo:later:abc123"),
        ]
        assert message.thread_ts == root.ts

        delivery = await world.fake.click("UGRACE", message, "Approve")
        assert delivery.acked_in_time
        await world.fake.wait_for(lambda: world.fake.ephemerals("UGRACE") == [NOT_ACTIVE])
        await world.idle()
        assert world.fake.ephemerals("UADA") == []
        note = world.fake.workspace.ephemerals[0]
        assert (note.channel, note.thread_ts) == ("CGENERAL", root.ts)


async def test_buttons_still_work_after_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} before the restart")
        await world.answered(root)
        message = await card(world, root)
        await world.restart()  # a new runtime, core and adapter on the same data directory

        assert (await world.fake.click("UADA", message, "Deny")).acked_in_time
        await world.fake.wait_for(lambda: world.fake.ephemerals("UADA") == [NOT_ACTIVE])
        await world.fake.say("UADA", "CGENERAL", "still here?", thread_ts=root.ts)
        replies = await world.answered(root, 3)
        assert replies[-1].shown == "Ada said: still here?"  # the thread survived too


async def test_the_todo_panel_is_pinned_while_open_and_unpinned_when_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_items = {
        "todos": [
            {"content": "Read the logs", "status": "in_progress"},
            {"content": "Write the fix", "status": "pending"},
        ]
    }
    done = {
        "todos": [
            {"content": "Read the logs", "status": "completed"},
            {"content": "Write the fix", "status": "completed"},
        ]
    }
    model = ScriptedModel(
        [
            step(call("todo_write", open_items)),
            text("Working on it."),
            step(call("todo_write", done)),
            text("All done."),
        ]
    )
    async with slack_world(tmp_path, monkeypatch, model=model) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} fix the build")
        await world.fake.wait_for(
            lambda: any(
                m.shown == "Working on it." for m in world.fake.replies("CGENERAL", root.ts)
            )
        )
        await world.idle()
        panel = next(m for m in world.fake.replies("CGENERAL", root.ts) if "Plan" in m.shown)
        assert world.fake.pins("CGENERAL") == [panel.ts]
        assert "Read the logs" in panel.shown and "0/2 done" in panel.shown

        await world.restart()
        await world.fake.say("UADA", "CGENERAL", "finish it", thread_ts=root.ts)
        await world.fake.wait_for(
            lambda: any(m.shown == "All done." for m in world.fake.replies("CGENERAL", root.ts))
        )
        await world.idle()
        panels = [m for m in world.fake.replies("CGENERAL", root.ts) if "Plan" in m.shown]
        assert [p.ts for p in panels] == [panel.ts]  # edited in place, never posted twice
        assert "2/2 done" in panels[0].shown
        assert world.fake.pins("CGENERAL") == []


async def test_mass_mentions_from_the_model_notify_nobody(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = (
        "Hey <!channel>, <!here> <!everyone> <!subteam^S0TEAM|@devs>: @channel @here @everyone!"
    )
    async with slack_world(tmp_path, monkeypatch, model=ScriptedModel([text(answer)])) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} tell everyone")
        reply = (await world.answered(root))[0]
        for raw in (
            "<!channel>",
            "<!here>",
            "<!everyone>",
            "<!subteam",
            "@channel",
            "@here",
            "@everyone",
        ):
            assert raw not in reply.shown and raw not in reply.text
        assert reply.shown.replace("\u200b", "") == answer


async def test_tables_and_code_survive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = "Results:\n\n| name | n |\n|---|--:|\n| a | 1 |\n| bb | 22 |\n\n```sh\necho '<b>' && ls\n```"
    async with slack_world(tmp_path, monkeypatch, model=ScriptedModel([text(answer)])) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} table please")
        reply = (await world.answered(root))[0]
        assert reply.shown == (
            "Results:\n\n```\nname |  n\n-----+---\na    |  1\nbb   | 22\n```\n\n```sh\necho '<b>' && ls\n```"
        )


async def test_an_approval_card_is_decided_by_a_click_after_a_restart_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel(
        [
            step(call("run_command", {"command": "echo approved-and-ran"})),
            text("The command printed its line."),
        ]
    )
    async with slack_world(tmp_path, monkeypatch, model=model, workspace_tools=True) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} run the echo")

        def cards() -> list[Message]:
            return [m for m in world.fake.replies("CGENERAL", root.ts) if m.buttons]

        await world.fake.wait_for(lambda: bool(cards()))
        await world.idle()
        card_message = cards()[0]
        labels = [b["text"]["text"] for b in cards()[0].buttons]
        assert "Approve" in labels and "Deny" in labels
        assert "echo approved-and-ran" in cards()[0].shown

        await world.fake.click("UGRACE", cards()[0], "Approve")  # not hers to approve
        await world.fake.wait_for(lambda: len(world.fake.ephemerals("UGRACE")) == 1)
        await world.restart()  # the process goes away between the card and the click
        assert (await world.fake.click("UADA", cards()[0], "Approve")).acked_in_time
        await world.fake.wait_for(
            lambda: any(
                m.shown == "The command printed its line."
                for m in world.fake.replies("CGENERAL", root.ts)
            )
        )
        await world.idle()
        results = [m for r in world.model.requests for m in r.messages if m.role == "tool"]
        assert any("approved-and-ran" in m.content for m in results)  # type: ignore[union-attr]
        assert "Ada" in card_message.shown and not card_message.buttons  # decided, and by whom


def _ops_approve(model: ScriptedModel) -> dict[str, object]:
    """Settings: ``run_command`` is decided by the Slack user group SOPS alone."""
    approvers = {"roles": ["slack:group:SOPS"], "requester": False}
    return {
        "model": model,
        "workspace_tools": True,
        "tools": {"run_command": {"approvers": approvers}},
    }


def _echo_then(answer: str) -> ScriptedModel:
    return ScriptedModel(
        [step(call("run_command", {"command": "echo by-the-group"})), text(answer)]
    )


async def test_a_member_of_a_user_group_named_as_approvers_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSlack()
    fake.workspace.usergroups["SOPS"] = {"UGRACE"}
    async with slack_world(
        tmp_path, monkeypatch, fake=fake, **_ops_approve(_echo_then("Done."))
    ) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} run the echo")
        await world.fake.wait_for(
            lambda: any(m.buttons for m in world.fake.replies("CGENERAL", root.ts))
        )
        await world.idle()
        card_message = next(m for m in world.fake.replies("CGENERAL", root.ts) if m.buttons)
        await world.fake.click("UADA", card_message, "Approve")  # asked, but not in the group
        await world.fake.wait_for(lambda: len(world.fake.ephemerals("UADA")) == 1)
        assert "isn't yours to decide" in world.fake.ephemerals("UADA")[0]
        await world.fake.click("UGRACE", card_message, "Approve")
        await world.fake.wait_for(
            lambda: any(m.shown == "Done." for m in world.fake.replies("CGENERAL", root.ts))
        )
        await world.idle()
        assert world.fake.api.counts["usergroups.users.list"] == 1  # members kept for a minute


async def test_without_the_usergroups_scope_nobody_decides_by_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeSlack(scopes=ALL_SCOPES - {"usergroups:read"})
    fake.workspace.usergroups["SOPS"] = {"UGRACE"}
    async with slack_world(
        tmp_path, monkeypatch, fake=fake, **_ops_approve(_echo_then("Done."))
    ) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} run the echo")
        await world.fake.wait_for(
            lambda: any(m.buttons for m in world.fake.replies("CGENERAL", root.ts))
        )
        await world.idle()
        card_message = next(m for m in world.fake.replies("CGENERAL", root.ts) if m.buttons)
        await world.fake.click("UGRACE", card_message, "Approve")
        await world.fake.wait_for(lambda: len(world.fake.ephemerals("UGRACE")) == 1)
        await world.idle()
        assert "isn't yours to decide" in world.fake.ephemerals("UGRACE")[0]
        assert not any(m.shown == "Done." for m in world.fake.replies("CGENERAL", root.ts))
        assert "usergroups:read" in caplog.text


async def test_a_leftover_stop_button_is_removed_and_the_text_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} hello")
        [reply] = await world.answered(root)
        key = thread_key(world.adapter.identity.team_id, "CGENERAL", root.ts)  # type: ignore[union-attr]
        surface = world.adapter.surface(key)
        await surface.edit(reply.ts, "a half answer", (Button("stop:gone", "Stop", "danger"),))
        assert world.fake.workspace.find("CGENERAL", reply.ts).buttons  # type: ignore[union-attr]
        await surface.drop_buttons(reply.ts)
        kept = world.fake.workspace.find("CGENERAL", reply.ts)
        assert kept is not None and kept.buttons == [] and kept.shown == "a half answer"
