"""Custom tools from ``[custom_tools.NAME]``: a program run in the command sandbox, or one HTTP
request, offered to the model under NAME with the parameters the operator declared.

A ``command`` is a list of arguments, never a shell line: ``{name}`` inside an element is
replaced by the argument's value and the element stays one argument (``; rm -rf /`` is just
text). An element naming an optional argument that was not given is left out. Commands run
through the same runner as ``run_command`` (the sandbox), in the thread's workspace, and ask
every time by default ("Always allow" is not offered for programs).

An ``http`` request takes ``${VAR}`` from the environment in its URL and headers when it is
made; those values never reach the model (results and errors are redacted) or the log.
Arguments go into the URL where it names them (``{name}``, encoded), the others into the
query (GET, DELETE) or a JSON body.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, create_model

from bot.tools.base import Tool, ToolContext, ToolError
from bot.tools.builtin.workspace import describe_result
from bot.tools.commands import CommandRunner
from bot.tools.http import Client
from bot.tools.sandbox import Workspace
from bot.tools.settings import (
    ARG_PLACEHOLDER,
    ENV_PLACEHOLDER,
    CustomToolSettings,
    HttpSettings,
    ParameterSettings,
)

log = logging.getLogger(__name__)

MAX_STRING = 10_000
"""The longest string argument a custom tool takes."""
MAX_BYTES = 2_000_000
MAX_CHARS = 19_000
_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool}

Network = Callable[[str], bool]


def arguments_model(name: str, parameters: Mapping[str, ParameterSettings]) -> type[BaseModel]:
    """The model that checks a call's arguments, and whose JSON schema the model is shown."""
    fields: dict[str, Any] = {}
    for param, spec in parameters.items():
        kind: Any = Literal[tuple(spec.enum)] if spec.enum else _TYPES[spec.type]
        longest = MAX_STRING if spec.type == "string" and not spec.enum else None
        if not spec.needed and spec.default is None:
            kind = kind | None
        default = ... if spec.needed else spec.default
        fields[param] = (
            kind,
            Field(default, description=spec.description or None, max_length=longest),
        )
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)


def custom_tools(
    configured: Mapping[str, CustomToolSettings],
    runner: CommandRunner | None,
    workspaces: Path,
    network: Callable[[str, bool], Network],
    environ: Mapping[str, str] = os.environ,
) -> list[Tool]:
    """The enabled custom tools; a command tool only where commands can run (``runner``).
    ``network(name, default)`` says per thread whether a command tool may reach the network."""
    found: list[Tool] = []
    for name, spec in configured.items():
        if not spec.enabled:
            continue
        if spec.command is not None:
            if runner is None:
                log.warning(
                    "custom tool %s is not offered: commands cannot run here (see threadline doctor)",
                    name,
                )
                continue
            found.append(
                command_tool(
                    name, spec, spec.command, runner, workspaces, network(name, spec.network)
                )
            )
        elif spec.http is not None:
            found.append(http_tool(name, spec, spec.http, environ))
    return found


def command_tool(
    name: str,
    spec: CustomToolSettings,
    template: Sequence[str],
    runner: CommandRunner,
    workspaces: Path,
    network: Network,
) -> Tool:
    async def run(ctx: ToolContext, **arguments: Any) -> str:
        argv = fill_argv(template, arguments)
        workspace = Workspace.for_thread(workspaces, ctx.thread_key, runner.owner)
        result = await runner.run(argv, workspace, spec.timeout_s, network=network(ctx.thread_key))
        return describe_result(result, spec.timeout_s)

    model = arguments_model(name, spec.parameters)
    return Tool(
        name, spec.description, model, run, side_effects=True, approval="ask", executes=True
    )


def fill_argv(template: Sequence[str], arguments: Mapping[str, Any]) -> list[str]:
    """``template`` with each ``{name}`` replaced inside its element; elements naming an
    argument that was not given are left out."""
    argv: list[str] = []
    for element in template:
        named = [m.group(1) for m in ARG_PLACEHOLDER.finditer(element) if m.group(1) in arguments]
        if any(arguments[n] is None for n in named):
            continue
        filled = ARG_PLACEHOLDER.sub(
            lambda m: _text(arguments[m.group(1)]) if m.group(1) in arguments else m.group(0),
            element,
        )
        if "\x00" in filled:
            raise ToolError("an argument cannot contain a NUL character")
        argv.append(filled)
    return argv


def http_tool(
    name: str, spec: CustomToolSettings, http: HttpSettings, environ: Mapping[str, str]
) -> Tool:
    async def request(ctx: ToolContext, **arguments: Any) -> str:
        values = {k: v for k, v in arguments.items() if v is not None}
        secrets = [environ[v] for v in spec.variables() if environ.get(v)]
        try:
            async with asyncio.timeout(spec.timeout_s):
                return _redact(await _send(http, values, environ), secrets)
        except ToolError as exc:
            raise ToolError(_redact(str(exc), secrets)) from None
        except TimeoutError:
            raise ToolError(f"{name}: no answer within {spec.timeout_s:g} s") from None

    model = arguments_model(name, spec.parameters)
    return Tool(name, spec.description, model, request, side_effects=True, approval="ask")


async def _send(http: HttpSettings, values: dict[str, Any], environ: Mapping[str, str]) -> str:
    used: set[str] = set()

    def argument(match: Any) -> str:
        value = _text(values[match.group(1)])
        if value in (".", ".."):
            raise ToolError(f"{match.group(1)} cannot be {value!r}: it would change the URL's path")
        used.add(match.group(1))
        return quote(value, safe="")

    def variable(match: Any) -> str:
        return environ.get(match.group(1), "")

    filled = ARG_PLACEHOLDER.sub(lambda m: argument(m) if m.group(1) in values else "", http.url)
    url = ENV_PLACEHOLDER.sub(variable, filled)
    headers = {k: ENV_PLACEHOLDER.sub(variable, v) for k, v in http.headers.items()}
    rest = {k: v for k, v in values.items() if k not in used}
    in_query = http.method in ("GET", "DELETE")
    params = {k: _text(v) for k, v in rest.items()} if in_query else None
    body = rest if not in_query else None
    async with Client() as session:
        answer = await session.request(
            http.method, url, params=params, json=body, headers=headers, limit=MAX_BYTES
        )
    text = answer.text()
    if answer.status >= 400:
        raise ToolError(f"answered {answer.status} {answer.reason}: {text[:500]}")
    if answer.content_type == "application/json" and answer.complete:
        try:
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    if len(text) > MAX_CHARS:
        text = f"{text[:MAX_CHARS]}\n[cut: {len(text) - MAX_CHARS:,} more characters]"
    return f"{answer.status} {answer.reason}\n\n{text}"


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _redact(text: str, secrets: Sequence[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return text
