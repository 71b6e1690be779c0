"""The states of the agent loop (see :mod:`bot.engine.loop`), its settings and its result."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from bot.engine.prompt import DEFAULT_SYSTEM_PROMPT
from bot.llm.messages import ToolCall, Usage
from bot.llm.model import DEFAULT_SAMPLING, Sampling

if TYPE_CHECKING:
    from bot.config import Settings


@dataclass(frozen=True, slots=True)
class EngineConfig:
    system_prompt: str
    max_turns: int = 25
    max_output_tokens: int | None = None
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    context_window: int = 128_000
    compact_at: float = 0.8
    keep_recent_turns: int = 4
    run_max_tokens: int | None = None
    run_max_cost_usd: float | None = None
    day_max_tokens: int | None = None
    day_max_cost_usd: float | None = None
    model: str | None = None
    """The model named in requests (None: the model's own name)."""
    offer_tools: tuple[str, ...] | None = None
    """Only these tools are offered (``name*`` matches a prefix); None: all."""
    hide_tools: tuple[str, ...] = ()
    text_tool_calls: bool = False
    """Read tool calls the model writes in its text (:mod:`bot.llm.text_calls`)."""
    timezone: str = "UTC"
    """Where the times told in the thread are read (an IANA name)."""
    sampling: Sampling = DEFAULT_SAMPLING
    """Temperature, top_p, seed and reasoning effort, as each request sends them."""

    @classmethod
    def from_settings(cls, settings: Settings) -> EngineConfig:
        """Each field from the setting of the same name; the built-in prompt unless one is set."""
        values: dict[str, Any] = {
            f.name: getattr(settings, f.name) for f in fields(cls) if f.name in _FROM_SETTINGS
        }
        sampling = Sampling(
            temperature=settings.temperature,
            top_p=settings.top_p,
            seed=settings.seed,
            reasoning_effort=settings.reasoning_effort,
        )
        return cls(
            system_prompt=settings.system_prompt or DEFAULT_SYSTEM_PROMPT,
            sampling=sampling,
            **values,
        )

    def offers(self, tool: str) -> bool:
        """Whether the tool named ``tool`` is offered under this configuration."""
        if any(_matches(p, tool) for p in self.hide_tools):
            return False
        return self.offer_tools is None or any(_matches(p, tool) for p in self.offer_tools)

    def cost(self, usage: Usage) -> float:
        if self.price_input_per_mtok is None or self.price_output_per_mtok is None:
            return 0.0
        return (
            usage.prompt_tokens * self.price_input_per_mtok
            + usage.completion_tokens * self.price_output_per_mtok
        ) / 1_000_000


_FROM_SETTINGS = frozenset(
    {
        "max_turns",
        "max_output_tokens",
        "price_input_per_mtok",
        "price_output_per_mtok",
        "context_window",
        "compact_at",
        "keep_recent_turns",
        "run_max_tokens",
        "run_max_cost_usd",
        "day_max_tokens",
        "day_max_cost_usd",
        "text_tool_calls",
        "timezone",
    }
)


def _matches(pattern: str, name: str) -> bool:
    return name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern


@dataclass(frozen=True, slots=True)
class CallModel:
    round: int


@dataclass(frozen=True, slots=True)
class RunTools:
    round: int
    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class WrapUp:
    round: int


@dataclass(frozen=True, slots=True)
class Finish:
    pass


@dataclass(frozen=True, slots=True)
class Pause:
    pass


@dataclass(frozen=True, slots=True)
class Fail:
    message: str


State = CallModel | RunTools | WrapUp | Finish | Pause | Fail


@dataclass(frozen=True, slots=True)
class RunResult:
    ok: bool
    rounds: int
    usage: Usage
    message: str | None = None
    paused: bool = False
    """It waits for approvals; ``run(resume=True)`` goes on once they are decided."""
