"""The tools a model may call, by name; toolkits add a ``prefix__`` namespace."""

from __future__ import annotations

from collections.abc import Iterable

from bot.llm.model import ToolSpec
from bot.tools.base import Tool


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._specs: tuple[ToolSpec, ...] | None = None
        for item in tools:
            self.add(item)

    def add(self, item: Tool) -> None:
        if item.name in self._tools:
            raise ValueError(f"a tool named {item.name!r} is already registered")
        self._tools[item.name] = item
        self._specs = None

    def add_toolkit(self, prefix: str, tools: Iterable[Tool]) -> None:
        """Register ``tools`` as ``{prefix}__{name}`` (``github__create_pr``)."""
        for item in tools:
            self.add(item.renamed(f"{prefix}__{item.name}"))

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def specs(self) -> tuple[ToolSpec, ...]:
        """What the model is told, computed once per registry change."""
        if self._specs is None:
            self._specs = tuple(
                ToolSpec(t.name, t.description, t.parameters) for t in self._tools.values()
            )
        return self._specs
