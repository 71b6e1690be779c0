"""Discord and Slack in one process, on one core, through the Runtime the CLI runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.runtime import Runtime
from tests.adapters.discord.conftest import ENV, discord_values, echo
from tests.fakes.config import configure
from tests.fakes.discord import FakeDiscord, FastClock
from tests.fakes.scripted_model import ScriptedModel
from tests.fakes.slack.server import MENTION, FakeSlack

SLACK_FAST = {"slack_min_edit_interval": 0.05, "slack_edits_per_minute": 6000.0}


async def test_slack_and_discord_share_one_core(
    fake: FakeDiscord, clock: FastClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    guild = fake.world.add_guild()
    channel = fake.world.add_channel(guild)
    ada = fake.world.add_user("Ada", guild=guild)
    slack = FakeSlack()
    await slack.start()
    settings, platforms = configure(
        _env_file=None,
        data_dir=tmp_path / "data",
        http_port=0,
        playground=False,
        **discord_values(fake),
        **slack.settings(),
        **SLACK_FAST,
    )
    runtime = Runtime(
        settings, platforms=platforms, clock=clock, model=ScriptedModel([], respond=echo)
    )
    try:
        await runtime.start()
        assert [type(a).__name__ for a in runtime.adapters] == ["SlackAdapter", "DiscordAdapter"]
        await fake.wait_for(lambda: fake.gateway.live_sessions())

        asked = fake.say(channel, ada, f"<@{fake.world.bot.id}> from Discord")
        root = await slack.say("UADA", "CGENERAL", f"{MENTION} from Slack")
        await fake.wait_for(lambda: fake.world.messages[asked.id].thread_id is not None)
        thread = fake.world.messages[asked.id].thread_id
        assert thread is not None
        await fake.wait_for(lambda: fake.world.shown(thread) == ["Ada said: from Discord"])
        await slack.wait_for(
            lambda: [m.text for m in slack.replies("CGENERAL", root.ts)] == ["Ada said: from Slack"]
        )
    finally:
        await runtime.stop()
        await slack.stop()
