"""The ``@tool`` decorator: a typed async function becomes a tool the model can call.

The JSON schema of the arguments is derived once, from the signature and the docstring's
``Args:`` section; the model's arguments are validated with pydantic before the function runs.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from bot.api.inbound import Author, ThreadKey
from bot.infra.clock import Clock
from bot.infra.text import valid_text
from bot.llm.messages import Usage
from bot.sessions.model import Session

if TYPE_CHECKING:
    from bot.engine.events import EventSink

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class ToolError(Exception):
    """Raised by a tool to report a failure the model should see (not a crash)."""

    def __init__(self, message: str) -> None:
        super().__init__(valid_text(message))


@dataclass(slots=True)
class ToolContext:
    """What a running tool may know about its thread."""

    thread_key: ThreadKey
    session: Session
    requester: Author | None
    clock: Clock
    scratch: dict[str, Any] = field(default_factory=dict)
    call_id: str = ""
    """The call being run (each call gets its own copy of the context)."""
    events: EventSink | None = None
    """What the thread shows of the run calling the tool (set by the engine): a tool that works
    for long (``delegate_task``) reports its progress and asks for approvals through it."""
    previews: dict[str, str] = field(default_factory=dict)
    """What a call's output shows people, by call id, where it is not what the model reads
    (an MCP tool's content for the assistant alone): the engine previews this instead."""
    spent: Callable[[Usage, float], None] | None = None
    """Counts tokens (and their cost) a tool used for the run in its limits and the thread's
    totals (set by the engine; a sub-agent's model calls)."""


ToolFunction = Callable[..., Awaitable[str]]
Approval = Literal["always", "ask", "never"]
"""When a call needs a person's approval: ``always``; ``ask`` (unless someone chose "Always allow
here" in that channel); ``never``. Configuration may override it per tool."""


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    arguments: type[BaseModel]
    function: ToolFunction
    side_effects: bool = False
    """It changes something outside the session: never re-run silently after a crash."""
    approval: Approval = "never"
    executes: bool = False
    """It runs programs: "Always allow here" is offered only where an operator enables it."""
    schema: Mapping[str, Any] | None = field(default=None, compare=False)
    """The JSON schema the model is shown, when it does not come from ``arguments`` (a tool
    described by someone else, such as an MCP server); ``arguments`` then only checks that
    the model sent an object (see :class:`AnyArguments`)."""
    approval_for: Callable[[BaseModel], Approval | None] | None = field(default=None, compare=False)
    """The approval one call needs, from its arguments (``fetch_url``: ``never`` for a domain
    the operator listed); None: the tool's configured or default ``approval``. An ``approval``
    set in the configuration wins over it."""
    rule_subject: Callable[[BaseModel], str | None] | None = field(default=None, compare=False)
    """What an "Always allow" rule made on one call covers, finer than the whole tool (a
    origin for ``fetch_url``: the rule then covers ``fetch_url:<scheme>://<host>[:<port>]``);
    None: the tool."""
    caution: str = ""
    """A warning the approval card shows about the tool (``the server marks this tool
    destructive``); empty: none."""
    concurrent: bool = False
    """Its calls in one batch run side by side, each in a lane of its own, even though it has
    side effects (``delegate_task``: each call's own side effects are asked for as usual)."""

    @property
    def parameters(self) -> Mapping[str, Any]:
        return self.schema if self.schema is not None else _schema(self.arguments)

    def renamed(self, name: str) -> Tool:
        _check_name(name)
        return dataclasses.replace(self, name=name)

    def parse(self, raw: str) -> BaseModel:
        """Validate the model's JSON arguments; raises ToolError with a message for the model."""
        text = raw.strip() or "{}"
        try:
            return self.arguments.model_validate_json(text)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors(include_url=False)[:5]
            )
            raise ToolError(f"invalid arguments for {self.name}: {problems}") from None

    async def invoke(self, ctx: ToolContext, args: BaseModel) -> str:
        values = {name: getattr(args, name) for name in type(args).model_fields}
        values.update(args.model_extra or {})
        return valid_text(await self.function(ctx, **values))


class AnyArguments(BaseModel):
    """Arguments checked by someone else: any JSON object (its members are passed on as they are)."""

    model_config = ConfigDict(extra="allow")


_schema_cache: dict[type[BaseModel], dict[str, Any]] = {}


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    cached = _schema_cache.get(model)
    if cached is None:
        cached = model.model_json_schema()
        cached.pop("title", None)
        _schema_cache[model] = cached
    return cached


def _check_name(name: str) -> None:
    if not NAME_PATTERN.match(name):
        raise ValueError(f"tool name {name!r} must match {NAME_PATTERN.pattern}")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary (text before ``Args:``) and each argument's description (Google style)."""
    summary: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    section = "summary"
    for line in inspect.cleandoc(doc).splitlines():
        stripped = line.strip()
        if re.fullmatch(r"(Args|Arguments|Parameters|Returns|Raises):", stripped):
            section = "args" if stripped[0] in "AP" else "other"
            continue
        if section == "summary":
            summary.append(line)
        elif section == "args":
            indent = len(line) - len(line.lstrip())
            match = _PARAM_LINE.match(stripped)
            if match and indent <= 4:
                current = match.group(1)
                params[current] = match.group(2)
            elif current and stripped:
                params[current] = f"{params[current]} {stripped}"
    return "\n".join(summary).strip(), params


_PARAM_LINE = re.compile(r"^(\w+)\s*(?:\([^)]*\))?:\s*(.*)$")


@overload
def tool(function: ToolFunction, /) -> Tool: ...


@overload
def tool(
    function: ToolFunction,
    /,
    *,
    name: str | None = None,
    side_effects: bool = False,
    approval: Approval | None = None,
    executes: bool = False,
) -> Tool: ...


@overload
def tool(
    function: None = None,
    /,
    *,
    name: str | None = None,
    side_effects: bool = False,
    approval: Approval | None = None,
    executes: bool = False,
) -> Callable[[ToolFunction], Tool]: ...


def tool(
    function: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    side_effects: bool = False,
    approval: Approval | None = None,
    executes: bool = False,
) -> Tool | Callable[[ToolFunction], Tool]:
    """Make a tool of ``async def f(ctx: ToolContext, arg: T, ...) -> str``.

    Usable bare (``@tool``) or with options (``@tool(name="x", side_effects=True)``). A tool
    with side effects asks for approval unless told otherwise.
    """

    def wrap(fn: ToolFunction) -> Tool:
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"tool {fn.__name__} must be an async function")
        tool_name = name or fn.__name__
        _check_name(tool_name)
        summary, docs = _parse_docstring(fn.__doc__ or "")
        hints = get_type_hints(fn, include_extras=True)
        params = list(inspect.signature(fn).parameters.values())
        if not params or hints.get(params[0].name) is not ToolContext:
            raise TypeError(f"tool {tool_name}: the first parameter must be `ctx: ToolContext`")
        fields: dict[str, Any] = {}
        for param in params[1:]:
            if param.name not in hints:
                raise TypeError(f"tool {tool_name}: parameter {param.name} needs a type annotation")
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[param.name] = (
                hints[param.name],
                Field(default, description=docs.get(param.name)),
            )
        model = create_model(
            f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
        mode: Approval = approval or ("ask" if side_effects else "never")
        return Tool(tool_name, summary or tool_name, model, fn, side_effects, mode, executes)

    if function is not None:
        return wrap(function)
    return wrap


def one_id_schema(name: str, description: str, ids: Sequence[str] | None) -> dict[str, Any]:
    """The schema of a tool whose one argument ``name`` is an id; ``ids`` (when given) are the ones
    that exist in the thread now, offered as its enum."""
    field: dict[str, Any] = {"type": "string", "description": description}
    if ids:
        field["enum"] = list(ids)
    return {
        "type": "object",
        "properties": {name: field},
        "required": [name],
        "additionalProperties": False,
    }


K = TypeVar("K")
V = TypeVar("V")


class Offers(Generic[K, V]):
    """What a toolkit offers for each ``key`` (the ids that exist now, its state's version),
    built once per key and kept in a bounded cache: the offer changes only when the key does."""

    def __init__(self, build: Callable[[K], V], size: int = 256) -> None:
        self._build = build
        self._size = size
        self._built: dict[K, V] = {}

    def get(self, key: K) -> V:
        found = self._built.get(key)
        if found is None:
            if len(self._built) >= self._size:
                self._built.clear()
            found = self._built[key] = self._build(key)
        return found
