"""Skills: listed from ``<skills_dir>/<name>/SKILL.md``, offered to the model by name (only the
ones not loaded yet), loaded by the model or by a person, kept in the thread's state and the
system prompt, capped at 4 KB, never read from outside the folder."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import ThreadKey
from bot.sessions.model import Session
from bot.tools.base import ToolError
from bot.tools.skill_files import Catalog
from bot.tools.skills import MAX_LOADED, TOOL, SkillsToolkit
from tests.bot.tools.world import ALICE, KEY, World
from tests.fakes.scripted_model import call, step, text

RELEASE = "1. Bump the version.\n2. Write the changelog.\n3. Tag and announce."


def write_skill(
    root: Path,
    folder: str,
    body: str,
    *,
    name: str | None = None,
    description: str = "How we do it.",
) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name or folder}\ndescription: {description}\n---\n{body}\n")
    return path


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(
        root, "release", RELEASE, description="How we cut a release: version, changelog, tag."
    )
    write_skill(
        root,
        "oncall",
        "Page the secondary after 15 minutes.",
        description='"What to do when paged."',
    )
    return root


@pytest.fixture
async def world(tmp_path: Path, skills: Path) -> AsyncIterator[World]:
    w = await World(tmp_path / "data", toolkits=[(SkillsToolkit(skills), (TOOL,))]).start()
    yield w
    await w.core.aclose()


def offered(request: Any) -> dict[str, Any]:
    return {t.name: t for t in request.tools}


async def test_the_model_sees_the_skills_and_loads_one_into_its_system_prompt(world: World) -> None:
    world.model.steps = [
        step(call(TOOL, {"name": "release"})),
        text("Following the release skill."),
        text("ok"),
    ]
    await world.say("cut a release")
    first, second = world.model.requests
    spec = offered(first)[TOOL]
    assert spec.parameters["properties"]["name"]["enum"] == ["oncall", "release"]
    assert "- release: How we cut a release: version, changelog, tag." in spec.description
    assert "- oncall: What to do when paged." in spec.description
    assert world.results(TOOL) == [
        "Loaded the skill release (65 bytes). Its instructions are now part of the system prompt."
    ]
    assert f'<skill name="release">\n{RELEASE}\n</skill>' in second.system
    assert offered(second)[TOOL].parameters["properties"]["name"]["enum"] == ["oncall"]
    assert "release:" not in offered(second)[TOOL].description

    await world.restart()  # kept with the session
    await world.say("and now?")
    assert RELEASE in world.model.requests[-1].system
    assert "Skills loaded: release" in await world.core.describe(KEY)


async def test_loading_twice_changes_nothing_and_a_full_thread_is_told(
    world: World, skills: Path
) -> None:
    assert (await world.core.load_skill(KEY, "oncall", ALICE)).startswith("Loaded the skill oncall")
    session = await world.session()
    assert (
        await world.core.load_skill(KEY, "oncall", ALICE)
        == "The skill oncall is already loaded in this thread; nothing changed."
    )
    assert (await world.session()).toolkits == session.toolkits
    world.model.steps = [
        step(call(TOOL, {"name": "release"})),
        text("ok"),
        step(call(TOOL, {"name": "oncall"})),
        text("done"),
    ]
    await world.say("load release")
    await world.say("load oncall again")
    assert offered(world.model.requests[-2]).get(TOOL) is None  # nothing left to load: not offered
    assert (
        world.results(TOOL)[-1]
        == "error: every skill is already loaded in this thread: oncall, release"
    )

    for n in range(MAX_LOADED):
        write_skill(skills, f"extra{n}", "x")
    for n in range(MAX_LOADED - 2):
        await world.core.load_skill(KEY, f"extra{n}", ALICE)
    refused = await world.core.load_skill(KEY, f"extra{MAX_LOADED - 1}", ALICE)
    assert (
        refused == f"Not loaded: {MAX_LOADED} skills are loaded in this thread, the most it takes."
    )


async def test_a_long_skill_is_cut_at_4_kb_and_the_thread_is_told(
    world: World, skills: Path
) -> None:
    write_skill(skills, "long", "é" * 3000)  # 6,000 bytes
    note = await world.core.load_skill(KEY, "long", ALICE)
    assert note == (
        "Loaded the skill long, cut: it is 6,000 bytes and only its first 4,096 are loaded. "
        "Its instructions are now part of the system prompt."
    )
    world.model.steps = [text("ok")]
    await world.say("go")
    system = world.model.requests[-1].system
    assert (
        '<skill name="long" (cut: only the first 4,096 of its 6,000 bytes)>\n'
        + "é" * 2048
        + "\n</skill>"
        in system
    )
    assert "Skills loaded: long (cut at 4 KB)" in await world.core.describe(KEY)


@pytest.mark.parametrize(
    "name", ["../../etc", "../skills/release", "/etc/passwd", "release/../oncall", ".hidden", ""]
)
async def test_a_name_that_leads_elsewhere_is_refused(world: World, name: str) -> None:
    note = await world.core.load_skill(KEY, name, ALICE)
    assert note.startswith("Not loaded: ") and "is not a skill name" in note
    assert (await world.session()).toolkits == {}


async def test_the_model_naming_a_path_gets_an_error(world: World) -> None:
    world.model.steps = [step(call(TOOL, {"name": "../../etc"})), text("ok")]
    await world.say("load it")
    assert world.results(TOOL) == [
        "error: '../../etc' is not a skill name (letters, digits, - and _ only)"
    ]


def test_skills_without_a_proper_front_matter_or_outside_the_folder_are_left_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "skills"
    write_skill(root, "good", "Do good.")
    write_skill(root, "renamed", "x", name="other")
    (root / "bare").mkdir()
    (root / "bare" / "SKILL.md").write_text("No front matter here.\n")
    outside = write_skill(tmp_path / "elsewhere", "secret", "the operator's secrets").parent
    (root / "secret").symlink_to(outside)
    (root / "not a name").mkdir()
    with caplog.at_level(logging.WARNING):
        assert list(Catalog(root).skills()) == ["good"]
    assert "its front matter names it 'other', not 'renamed'" in caplog.text
    assert "skill bare is left out" in caplog.text
    assert (
        "skill secret is left out: the skill secret leads out of the skills folder" in caplog.text
    )


def test_a_hard_linked_skill_file_is_left_out_with_the_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "skills"
    write_skill(root, "good", "Do good.")
    secret = write_skill(tmp_path / "elsewhere", "linked", "the operator's secrets")
    (root / "linked").mkdir()
    os.link(secret, root / "linked" / "SKILL.md")
    catalog = Catalog(root)
    with caplog.at_level(logging.WARNING):
        assert list(catalog.skills()) == ["good"]
    assert catalog.left_out == {
        "linked": "the skill linked's SKILL.md has 2 hard links; hard-linked files are refused "
        "(a link can lead outside the skills folder)"
    }
    assert "skill linked is left out: the skill linked's SKILL.md has 2 hard links" in caplog.text


def test_a_skill_hard_linked_after_it_was_listed_is_refused_when_read(
    skills: Path, tmp_path: Path
) -> None:
    catalog = Catalog(skills)
    skill = catalog.skills()["oncall"]
    outside = tmp_path / "outside.md"
    outside.write_text("---\nname: oncall\ndescription: x\n---\nthe operator's secrets\n")
    skill.path.unlink()
    os.link(outside, skill.path)
    with pytest.raises(ToolError, match="hard links; hard-linked files are refused"):
        catalog.read(skill)


async def test_a_skill_added_while_running_is_offered_at_the_next_model_call(
    tmp_path: Path,
) -> None:
    toolkit = SkillsToolkit(tmp_path / "skills")
    session = Session(key=ThreadKey("test:t"))
    assert toolkit.tools("test:t", {}) == {}
    assert "no skills are installed" in toolkit.missing("test:t", TOOL, {})
    write_skill(tmp_path / "skills", "new", "Fresh.")
    assert list(toolkit.tools("test:t", {})) == [TOOL]
    assert (await toolkit.load(session, "new", "Alice")).startswith("Loaded the skill new")
    assert session.toolkits["skills"]["loaded"][0]["by"] == "Alice"
