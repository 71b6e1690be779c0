"""``/threadline skill NAME`` through the real discord.py and the fake Discord: the skill is
loaded into the thread, the person is told privately, and ``/threadline status`` lists it."""

from __future__ import annotations

from tests.adapters.discord.conftest import Discord
from tests.bot.tools.test_skills import RELEASE, write_skill

EPHEMERAL = 64


async def test_a_person_loads_a_skill_and_status_lists_it(running: Discord) -> None:
    d = running
    write_skill(d.settings.skills_path, "release", RELEASE)
    assert "skill" in {o["name"] for o in d.fake.world.commands[0]["options"]}
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("hello")))
    await d.shows(thread, ["Ada L. said: hello"])

    loaded = d.fake.slash(thread, d.ada, "threadline", "skill", name="release")
    await d.wait_for(lambda: loaded.followups)
    assert loaded.followups[0]["flags"] == EPHEMERAL
    assert loaded.followups[0]["content"].startswith("Loaded the skill release")

    refused = d.fake.slash(thread, d.ada, "threadline", "skill", name="../../etc")
    await d.wait_for(lambda: refused.followups)
    assert "is not a skill name" in refused.followups[0]["content"]

    status = d.fake.slash(thread, d.bob, "threadline", "status")
    await d.wait_for(lambda: status.followups)
    assert "Skills loaded: release" in status.followups[0]["content"]
