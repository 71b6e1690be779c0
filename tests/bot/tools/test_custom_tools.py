"""Custom tools from ``[custom_tools.NAME]``: the schema built from the declared parameters,
commands run in the sandbox with each argument one argv element, HTTP requests with secrets
from the environment that the model never sees, and the configuration mistakes refused."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import ThreadKey
from bot.config import Settings, load_settings
from bot.errors import ConfigError
from bot.infra.clock import ManualClock
from bot.sessions.model import Session
from bot.tools import Tool, ToolContext, ToolError
from bot.tools.builtin import builtin_tools
from bot.tools.commands import CommandRunner
from bot.tools.custom import command_tool, custom_tools, fill_argv, http_tool
from bot.tools.settings import CustomToolSettings
from tests.bot.tools.world import World
from tests.fakes.scripted_model import call, step, text
from tests.fakes.web_server import FakeWeb
from tests.sandboxing import sandbox_runner

KEY = ThreadKey("slack:T1:C1:100.1")
SECRET = "tok-5ecret-v4lue-991"


def spec(**values: Any) -> CustomToolSettings:
    return CustomToolSettings.model_validate({"description": "A custom tool.", **values})


def command(runner: CommandRunner, tmp_path: Path, template: list[str], **values: Any) -> Tool:
    made = spec(command=template, **values)
    assert made.command is not None
    return command_tool(
        "echo_args", made, made.command, runner, tmp_path / "workspaces", lambda key: False
    )


async def invoke(found: Tool, arguments: dict[str, Any]) -> str:
    ctx = ToolContext(KEY, Session(key=KEY), None, ManualClock())
    return await found.invoke(ctx, found.parse(json.dumps(arguments)))


PARAMETERS = {
    "text": {"description": "What to print."},
    "times": {"type": "integer", "description": "How often.", "default": 1},
    "style": {"enum": ["plain", "loud"], "required": False},
}


def test_the_schema_follows_the_declared_parameters(tmp_path: Path) -> None:
    found = command(
        sandbox_runner(),
        tmp_path,
        ["echo", "{text}", "{times}", "--style={style}"],
        parameters=PARAMETERS,
    )
    schema = found.parameters
    assert schema["required"] == ["text"] and schema["additionalProperties"] is False
    assert schema["properties"]["text"]["type"] == "string"
    assert schema["properties"]["times"] == {
        "default": 1,
        "description": "How often.",
        "title": "Times",
        "type": "integer",
    }
    assert {"enum": ["plain", "loud"], "type": "string"} in schema["properties"]["style"]["anyOf"]
    assert found.executes and found.side_effects and found.approval == "ask"
    for bad in (
        {"text": "a", "style": "quiet"},
        {"times": 2},
        {"text": "a", "other": 1},
        {"text": "a", "times": "many"},
    ):
        with pytest.raises(ToolError, match="invalid arguments for echo_args"):
            found.parse(json.dumps(bad))


def test_each_argument_is_one_element_and_absent_optional_ones_are_left_out() -> None:
    template = ["grep", "-n", "{pattern}", "--max-count={limit}", "{path}", "{literal} {x}"]
    values = {"pattern": "; rm -rf / #", "limit": None, "path": "a b.txt", "literal": "$(id)"}
    assert fill_argv(template, values) == ["grep", "-n", "; rm -rf / #", "a b.txt", "$(id) {x}"]
    assert fill_argv(["echo", "{flag}"], {"flag": True}) == ["echo", "true"]
    with pytest.raises(ToolError, match="NUL"):
        fill_argv(["echo", "{a}"], {"a": "x\x00y"})


async def test_a_command_runs_in_the_sandbox_with_shell_text_as_one_argument(
    tmp_path: Path,
) -> None:
    found = command(
        sandbox_runner(),
        tmp_path,
        ["printf", "[%s]\\n", "{text}", "{style}"],
        parameters=PARAMETERS,
    )
    shown = await invoke(found, {"text": "; rm -rf / ; echo $HOME `id`"})
    assert shown == "[; rm -rf / ; echo $HOME `id`]\n[exit code 0]"
    where = command(
        sandbox_runner(), tmp_path, ["sh", "-c", "pwd; ls /; echo {word}"], parameters={"word": {}}
    )
    listing = await invoke(where, {"word": "hi"})
    assert (
        listing.startswith("/workspace\n") and "home" not in listing.split()
    )  # the sandbox's view


async def test_a_command_that_fails_or_is_missing_is_a_result(tmp_path: Path) -> None:
    found = command(
        sandbox_runner(), tmp_path, ["no-such-program-xyz", "{a}"], parameters={"a": {}}
    )
    shown = await invoke(found, {"a": "b"})
    assert "no-such-program-xyz" in shown and shown.endswith("[exit code 127]")


@pytest.fixture
async def site() -> AsyncIterator[FakeWeb]:
    async with FakeWeb() as web:
        yield web


def http(
    site: FakeWeb, method: str = "GET", path: str = "/echo/items/{item}", **values: Any
) -> Tool:
    made = spec(
        http={
            "method": method,
            "url": f"{site.base}{path}",
            "headers": {"Authorization": "Bearer ${TICKETS_TOKEN}"},
        },
        parameters={
            "item": {},
            "note": {"required": False},
            "count": {"type": "integer", "default": 2},
        },
        **values,
    )
    assert made.http is not None
    return http_tool("tickets", made, made.http, {"TICKETS_TOKEN": SECRET})


async def test_an_http_tool_puts_arguments_in_the_url_query_or_body_and_hides_the_secret(
    site: FakeWeb,
) -> None:
    shown = await invoke(http(site), {"item": "a/b ?c", "note": "hello"})
    assert shown.startswith("200 OK\n\n")
    seen = json.loads(shown.split("\n\n", 1)[1])
    assert seen["path"] == "/echo/items/a%2Fb%20%3Fc" and seen["query"] == {
        "note": "hello",
        "count": "2",
    }
    assert seen["authorization"] == "Bearer [redacted]" and SECRET not in shown
    assert site.requests[-1]["headers"]["Authorization"] == f"Bearer {SECRET}"  # type: ignore[index]

    posted = json.loads(
        (await invoke(http(site, "POST"), {"item": "7", "count": 3})).split("\n\n", 1)[1]
    )
    assert posted["method"] == "POST" and posted["json"] == {"count": 3} and posted["query"] == {}


async def test_http_failures_are_results_without_the_secret(site: FakeWeb) -> None:
    with pytest.raises(ToolError, match="answered 404 Not Found") as failed:
        await invoke(http(site, path="/echo/x/{item}?status=404"), {"item": "1"})
    assert SECRET not in str(failed.value) and "[redacted]" in str(failed.value)
    with pytest.raises(ToolError, match="cannot be '..'"):
        await invoke(http(site), {"item": ".."})
    with pytest.raises(ToolError, match="no answer within 0.2 s"):
        await invoke(http(site, path="/echo/{item}/slow", timeout_s=0.2), {"item": "1"})


async def test_a_command_tool_asks_every_time_and_an_http_tool_offers_always_allow(
    tmp_path: Path, site: FakeWeb
) -> None:
    runner = sandbox_runner()
    tools = [
        command(runner, tmp_path, ["printf", "%s", "{text}"], parameters={"text": {}}),
        http(site),
    ]
    world = await World(tmp_path, tools).start()
    try:
        world.model.steps = [
            step(call("echo_args", {"text": "; rm -rf /"})),
            text("printed"),
            step(call("tickets", {"item": "1"})),
            text("looked"),
        ]
        await world.say("print it")
        [card] = world.cards("echo_args")
        assert [b.label for b in card.buttons] == ["Approve", "Deny"] and "; rm -rf /" in card.text
        await world.click(card, "Approve")
        assert world.results("echo_args") == ["; rm -rf /\n[exit code 0]"]
        await world.say("look up ticket 1")
        [card] = world.cards("tickets")
        assert "Always allow for Alice here" in [b.label for b in card.buttons]
    finally:
        await world.core.aclose()


def test_custom_tools_are_built_from_the_settings_and_skip_commands_without_a_sandbox(
    tmp_path: Path,
) -> None:
    settings = Settings(
        data_dir=tmp_path,
        custom_tools={
            "say": {
                "description": "Say it.",
                "command": ["echo", "{words}"],
                "parameters": {"words": {}},
            },
            "look": {"description": "Look.", "http": {"url": "http://127.0.0.1:9/x"}},
            "off": {
                "description": "Off.",
                "http": {"url": "http://127.0.0.1:9/x"},
                "enabled": False,
            },
        },
    )
    found = custom_tools(
        settings.custom_tools, None, tmp_path, lambda name, default: lambda key: default
    )
    assert [t.name for t in found] == ["look"]
    names = [t.name for t in builtin_tools(settings)]
    assert "say" in names and "look" in names and "off" not in names


@pytest.mark.parametrize(
    ("tool", "problem"),
    [
        ({"description": "x"}, "give either command"),
        (
            {"description": "x", "command": ["a"], "http": {"url": "http://h/"}},
            "give either command",
        ),
        (
            {"description": "x", "command": ["echo", "{a}"], "parameters": {"a-b": {}}},
            "parameter 'a-b'",
        ),
        (
            {"description": "x", "command": ["echo"], "parameters": {"a": {}}},
            "parameter a is required but command does not use {a}",
        ),
        (
            {"description": "x", "command": ["{a}"], "parameters": {"a": {}}},
            "the program .* cannot come from an argument",
        ),
        (
            {
                "description": "x",
                "command": ["e", "{a}"],
                "parameters": {"a": {"type": "integer", "enum": ["x"]}},
            },
            "'x' is not of type integer",
        ),
        (
            {"description": "x", "http": {"url": "http://{a}.example/"}, "parameters": {"a": {}}},
            "not in its host",
        ),
        ({"description": "x", "http": {"url": "http://${HOST_VAR}/"}}, "not in its host"),
        (
            {"description": "x", "http": {"url": "http://h/{b}"}},
            "uses {b}, which is not a parameter",
        ),
        (
            {
                "description": "x",
                "http": {"url": "http://h/", "headers": {"X": "{a}"}},
                "parameters": {"a": {}},
            },
            "arguments cannot go into headers",
        ),
        (
            {
                "description": "x",
                "http": {"url": "http://h/", "headers": {"X": "${NOT_SET_ANYWHERE}"}},
            },
            "NOT_SET_ANYWHERE is not set",
        ),
        ({"description": "x", "http": {"url": "ftp://h/"}}, "must start with http"),
        ({"description": "", "http": {"url": "http://h/"}}, "description"),
    ],
)
def test_mistakes_in_a_custom_tool_are_refused_with_their_reason(
    tool: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem):
        load_settings(custom_tools={"mine": tool})


def test_bad_names_are_refused(tmp_path: Path) -> None:
    http_only = {"description": "x", "http": {"url": "http://h/"}}
    with pytest.raises(ConfigError, match="'__'"):
        load_settings(custom_tools={"a__b": http_only})
    with pytest.raises(ConfigError, match="1-64 letters"):
        load_settings(custom_tools={"a b": http_only})
    with pytest.raises(ConfigError, match="built-in tool"):
        builtin_tools(Settings(data_dir=tmp_path, custom_tools={"fetch_url": http_only}))
