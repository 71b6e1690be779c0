"""Where an MCP server is and what it offers, in our own terms (no SDK types)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.config import PLACEHOLDER, McpServerSettings
from bot.errors import ConfigError
from bot.mcp.auth import OAuthAccess
from bot.mcp.process import MAX_MESSAGE_BYTES, server_environment


@dataclass(frozen=True, slots=True)
class StdioEndpoint:
    command: str
    args: list[str]
    env: Mapping[str, str]
    """The whole environment of the process."""
    cwd: Path | None
    max_message_bytes: int = MAX_MESSAGE_BYTES
    """A longer line from the server ends the connection (it is started again on the next call)."""


@dataclass(frozen=True, slots=True)
class HttpEndpoint:
    url: str
    headers: Mapping[str, str]
    oauth: OAuthAccess | None = None
    """How it signs in with OAuth, if it does (else the headers are all)."""


Endpoint = StdioEndpoint | HttpEndpoint


@dataclass(frozen=True, slots=True)
class RemoteTool:
    """A tool as the server lists it."""

    name: str
    description: str
    schema: Any
    """Its ``inputSchema``, unchecked."""
    read_only: bool
    """Annotated ``readOnlyHint: true``."""
    open_world: bool = False
    """Annotated ``openWorldHint: true``: it reaches outside (the web, another service)."""
    destructive: bool = False
    """Annotated ``destructiveHint: true``."""
    task_required: bool = False
    """``execution.taskSupport`` is ``required``: it can only be called as a task (it is)."""
    unavailable: str = ""
    """Why this client cannot call it ("" when it can): it is not offered."""


def endpoint(name: str, server: McpServerSettings, environ: Mapping[str, str]) -> Endpoint:
    """The server's address with every ``${NAME}`` read from ``environ``."""
    try:
        if server.url is not None:
            return HttpEndpoint(server.url, server.resolved(server.headers, environ))
        assert server.command is not None
        env = server_environment(environ, server.resolved(server.env, environ))
        return StdioEndpoint(server.command, list(server.args), env, server.cwd)
    except KeyError as exc:
        raise ConfigError(
            f"mcp_servers.{name}", f"the environment variable {exc.args[0]} is not set"
        ) from None


def sign_in(server: McpServerSettings) -> str:
    """How the bot signs in to the server: the names of its static headers (never their
    values), or none."""
    if server.url is not None and server.oauth is not None:
        who = "one per person" if server.oauth.sign_in == "per_person" else "shared"
        grant = {"client_credentials": " (client credentials)", "enterprise": " (enterprise)"}.get(
            server.oauth.grant, ""
        )
        return f"OAuth, {who}{grant}"
    if server.url is not None and server.headers:
        return f"static headers ({', '.join(sorted(server.headers))})"
    return "none"


def secrets_of(server: McpServerSettings, environ: Mapping[str, str]) -> list[str]:
    """The values this server reads from the environment by name (kept out of the logs)."""
    names = {
        m.group(1)
        for v in (*server.env.values(), *server.headers.values(), *server.oauth_placeholders())
        for m in PLACEHOLDER.finditer(v)
    }
    return [environ[n] for n in sorted(names) if n in environ]


NO_TASKS = (
    "it can only be called as a task (execution.taskSupport: required), and the server does not"
    " declare task-augmented tools/call (capabilities.tasks.requests.tools.call)"
)


def remote_tools(entries: Any, *, tasks: bool = True) -> tuple[list[RemoteTool], list[str]]:
    """The tools of a ``tools/list`` page as the server sent it, each read on its own (one
    badly described tool does not cost the others), and what was wrong. Without ``tasks``
    (the server does not declare task-augmented calls), a task-only tool cannot be called."""
    if not isinstance(entries, list):
        return [], ["the answer has no list of tools"]
    found: list[RemoteTool] = []
    problems: list[str] = []
    for index, entry in enumerate(entries):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            problems.append(f"entry {index} has no name: skipped")
            continue
        annotations = entry.get("annotations")
        annotations = annotations if isinstance(annotations, dict) else {}
        texts = (entry.get("description"), annotations.get("title"), entry.get("title"))
        text = next((t for t in texts if isinstance(t, str) and t.strip()), "")
        execution = entry.get("execution")
        execution = execution if isinstance(execution, dict) else {}
        task_only = execution.get("taskSupport") == "required"
        found.append(
            RemoteTool(
                name,
                text,
                entry.get("inputSchema"),
                read_only=annotations.get("readOnlyHint") is True,
                open_world=annotations.get("openWorldHint") is True,
                destructive=annotations.get("destructiveHint") is True,
                task_required=task_only,
                unavailable=NO_TASKS if task_only and not tasks else "",
            )
        )
    return found, problems
