"""Skills: instructions a team writes for kinds of tasks, in ``<skills_dir>/<name>/SKILL.md``
with a short front matter (``name``, ``description``).

The model sees each skill's name and description in the ``load_skill`` tool, whose ``name``
parameter offers only the skills that exist and are not loaded in the thread yet; a person
loads one with ``/threadline skill NAME``. A loaded skill is kept in the thread's toolkit
state (its text as loaded, at most 4 KB; the thread is told when it was cut) and is part of
the system prompt from then on, so compacting the conversation never loses it. Loading a
skill twice changes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from bot.infra.clock import Clock
from bot.sessions.model import Session
from bot.tools.base import Offers, Tool, ToolContext, ToolError
from bot.tools.skill_files import MAX_SKILL_BYTES, NAME, Catalog, Skill
from bot.tools.state import set_state, state
from bot.tools.toolkit import State

log = logging.getLogger(__name__)

TOOLKIT = "skills"
TOOL = "load_skill"
MAX_LOADED = 8
"""The most skills one thread loads."""
DESCRIPTION_CHARS = 300


class LoadedSkill(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str
    text: str
    size: int = Field(ge=0)
    """Bytes of the skill's instructions on disk."""
    cut: bool = False
    """Only its first :data:`MAX_SKILL_BYTES` were loaded."""
    by: str = ""
    """Who loaded it: the model, or a person by name."""


_LOADED: TypeAdapter[list[LoadedSkill]] = TypeAdapter(list[LoadedSkill])


class LoadArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)


def loaded(current: State) -> list[LoadedSkill]:
    """The skills loaded in a thread, from its state (unreadable entries are dropped)."""
    try:
        return _LOADED.validate_python(current.get("loaded", []))
    except ValidationError:
        log.warning("a thread's skills state is unreadable; treating it as none loaded")
        return []


class SkillsToolkit:
    def __init__(self, root: Path, clock: Clock | None = None) -> None:
        self.catalog = Catalog(root, clock)
        self._tools: Offers[tuple[Hashable, tuple[str, ...]], dict[str, Tool]] = Offers(
            lambda version: self._offer(version[1]), size=64
        )

    @property
    def name(self) -> str:
        return TOOLKIT

    def version(self, key: str | None, state: State) -> Hashable:
        return self.catalog.generation(), _names(state)

    def tools(self, key: str | None, state: State) -> Mapping[str, Tool]:
        return self._tools.get((self.catalog.generation(), _names(state)))

    def missing(self, key: str | None, name: str, state: State) -> str:
        skills = self.catalog.skills()
        if not skills:
            return (
                f"{name} is not available: no skills are installed ({self.catalog.root} has none)"
            )
        return "every skill is already loaded in this thread: " + ", ".join(_names(state))

    def instructions(self, state: State) -> str:
        found = loaded(state)
        if not found:
            return ""
        parts = [
            "Skills loaded in this thread, written by the team. Follow a skill's instructions when its task is at hand."
        ]
        for skill in found:
            cut = (
                f" (cut: only the first {MAX_SKILL_BYTES:,} of its {skill.size:,} bytes)"
                if skill.cut
                else ""
            )
            parts.append(f'<skill name="{skill.name}"{cut}>\n{skill.text}\n</skill>')
        return "\n\n".join(parts)

    def status(self, state: State) -> list[str]:
        found = loaded(state)
        if not found:
            return []
        shown = ", ".join(f"{s.name} (cut at 4 KB)" if s.cut else s.name for s in found)
        return [f"Skills loaded: {shown}"]

    async def load(self, session: Session, name: str, by: str) -> str:
        """Load the skill ``name`` into the session's thread (saved with the session's next
        write); what to tell whoever asked. ToolError when it cannot be loaded."""
        if not NAME.match(name):
            raise ToolError(f"{name!r} is not a skill name (letters, digits, - and _ only)")
        current = loaded(state(session, TOOLKIT))
        if any(s.name == name for s in current):
            return f"The skill {name} is already loaded in this thread; nothing changed."
        skill = self.catalog.skills().get(name)
        if skill is None:
            known = ", ".join(sorted(self.catalog.skills())) or "none"
            raise ToolError(f"there is no skill named {name!r}; the skills: {known}")
        if len(current) >= MAX_LOADED:
            raise ToolError(f"{MAX_LOADED} skills are loaded in this thread, the most it takes")
        text, size = await asyncio.to_thread(self.catalog.read, skill)
        entry = LoadedSkill(name=name, text=text, size=size, cut=size > MAX_SKILL_BYTES, by=by)
        set_state(session, TOOLKIT, {"loaded": [s.model_dump() for s in (*current, entry)]})
        log.info("skill %s loaded in %s by %s (%d bytes)", name, session.key, by, size)
        if entry.cut:
            return (
                f"Loaded the skill {name}, cut: it is {size:,} bytes and only its first "
                f"{MAX_SKILL_BYTES:,} are loaded. Its instructions are now part of the system prompt."
            )
        return f"Loaded the skill {name} ({size:,} bytes). Its instructions are now part of the system prompt."

    def _offer(self, names: tuple[str, ...]) -> dict[str, Tool]:
        available = {n: s for n, s in self.catalog.skills().items() if n not in names}
        if not available:
            return {}
        lines = [
            "Load a skill: instructions the team wrote for a kind of task. Load one when the "
            "task at hand matches its description; it then stays in your system prompt for the "
            "rest of this thread. Skills:",
            *(f"- {s.name}: {_short(s.description)}" for s in available.values()),
        ]
        schema = {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "enum": sorted(available),
                    "description": "The skill's name.",
                }
            },
            "required": ["name"],
            "additionalProperties": False,
        }

        async def load_skill(ctx: ToolContext, **arguments: Any) -> str:
            return await self.load(ctx.session, str(arguments["name"]), "the assistant")

        return {TOOL: Tool(TOOL, "\n".join(lines), LoadArguments, load_skill, schema=schema)}


def _names(current: State) -> tuple[str, ...]:
    found = current.get("loaded", ())
    return (
        tuple(str(item.get("name")) for item in found if isinstance(item, dict))
        if isinstance(found, list)
        else ()
    )


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= DESCRIPTION_CHARS else flat[: DESCRIPTION_CHARS - 1] + "…"


__all__ = ["MAX_LOADED", "TOOL", "TOOLKIT", "LoadedSkill", "Skill", "SkillsToolkit", "loaded"]
