"""A small reader of Dockerfiles, for tests: instructions in order, with continuation lines
joined and comments dropped; JSON (exec) forms decoded."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Instruction:
    keyword: str
    """Upper case: ``RUN``, ``ENV``…"""
    value: str

    def words(self) -> list[str]:
        """The exec form's list, or the shell form split as a shell would."""
        if self.value.startswith("["):
            words: list[str] = json.loads(self.value)
            return words
        return shlex.split(self.value)


def read(path: Path) -> list[Instruction]:
    instructions: list[Instruction] = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, value = (pending + line).partition(" ")
        instructions.append(Instruction(keyword.upper(), " ".join(value.split())))
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued line"
    return instructions


def env_of(instructions: list[Instruction]) -> dict[str, str]:
    """Every ``ENV`` (``KEY=value`` pairs), later ones winning."""
    env: dict[str, str] = {}
    for instruction in instructions:
        if instruction.keyword == "ENV":
            env.update(word.split("=", 1) for word in shlex.split(instruction.value))  # type: ignore[arg-type]
    return env


def last(instructions: list[Instruction], keyword: str) -> Instruction:
    return [i for i in instructions if i.keyword == keyword][-1]


def healthcheck_command(instruction: Instruction) -> list[str]:
    """The command of a ``HEALTHCHECK [options] CMD …``."""
    _, _, command = instruction.value.partition("CMD ")
    return Instruction("CMD", command).words()
