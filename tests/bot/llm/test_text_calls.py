"""Tool calls written as text: read from streamed deltas, however the text is split."""

from __future__ import annotations

import json
import random

import pytest

from bot.llm.call_json import UNREADABLE, TextCall, drop_trailing_commas, loads_lenient
from bot.llm.text_calls import Found, TextCallScanner

WEATHER = '{"name": "weather", "arguments": {"city": "Brest"}}'
CALL = TextCall("weather", '{"city": "Brest"}')


def scan(deltas: list[str]) -> tuple[str, list[TextCall]]:
    """The text shown and the calls found, from ``deltas`` fed one by one."""
    scanner = TextCallScanner()
    found: list[Found] = []
    for delta in deltas:
        found.extend(scanner.feed(delta))
    found.extend(scanner.end())
    return (
        "".join(f for f in found if isinstance(f, str)),
        [f for f in found if isinstance(f, TextCall)],
    )


def splits(text: str) -> list[list[str]]:
    """``text`` whole, a character at a time, and in random pieces."""
    rng = random.Random(len(text))
    ways = [[text], list(text)]
    for _ in range(5):
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, 7)))
        ways.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)])
    return ways


CASES = [
    # (what the model wrote, what the thread shows, the calls)
    (f"Let me look.<tool_call>\n{WEATHER}\n</tool_call>", "Let me look.", [CALL]),
    (
        f"<tool_call>{WEATHER}</tool_call>\n<tool_call>"
        '{"name": "clock", "arguments": {}}</tool_call> done',
        "\n done",
        [CALL, TextCall("clock", "{}")],
    ),
    (f"<|python_tag|>{WEATHER.replace('arguments', 'parameters')}", "", [CALL]),
    (
        f'<|python_tag|>{WEATHER}; {{"name": "clock", "parameters": {{}}}}',
        "",
        [CALL, TextCall("clock", "{}")],
    ),
    (f"  {WEATHER.replace('arguments', 'parameters')}", "", [CALL]),
    (f"[{WEATHER}]", "", [CALL]),
    (
        f'[TOOL_CALLS][{WEATHER[:-1]}, "id": "a1b2c3d4e"}}]',
        "",
        [TextCall("weather", '{"city": "Brest"}', "a1b2c3d4e")],
    ),
    ('[TOOL_CALLS]weather[ARGS]{"city": "Brest"}', "", [CALL]),
    (
        '[TOOL_CALLS]weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Brest"}',
        "",
        [TextCall("weather", '{"city": "Brest"}', "a1b2c3d4e")],
    ),
    # arguments as JSON text, trailing commas, an unclosed last tag whose JSON is whole
    (
        '<tool_call>{"name": "weather", "arguments": "{\\"city\\": \\"Brest\\"}"}</tool_call>',
        "",
        [CALL],
    ),
    ('<tool_call>{"name": "weather", "arguments": {"city": "Brest",},}</tool_call>', "", [CALL]),
    (f"ok <tool_call>{WEATHER}", "ok ", [CALL]),
    # text that only looks like the start of a call
    ("a < b and [x] <tool", "a < b and [x] <tool", []),
    ("<tool_cal> is not a tag", "<tool_cal> is not a tag", []),
    ('{"city": "Brest"} is JSON', '{"city": "Brest"} is JSON', []),
    ("{braces} are fine", "{braces} are fine", []),
    ("[link](https://example.com)", "[link](https://example.com)", []),
    ("[1, 2, 3]", "[1, 2, 3]", []),
    ('{"name": "Alice"}', '{"name": "Alice"}', []),
]


@pytest.mark.parametrize(("written", "shown", "calls"), CASES)
def test_calls_are_read_and_held_back_however_the_text_is_split(
    written: str, shown: str, calls: list[TextCall]
) -> None:
    for deltas in splits(written):
        assert scan(deltas) == (shown, calls), deltas


def test_text_around_a_call_is_shown_as_it_streams_and_the_call_never() -> None:
    scanner = TextCallScanner()
    assert scanner.feed("Looking it up <") == ["Looking it up "]
    assert scanner.feed('tool_call>{"name": "weather", ') == []
    assert scanner.feed('"arguments": {"city": "Brest"}}</tool_call> Then') == [CALL, " Then"]
    assert scanner.feed(" more.") == [" more."]
    assert scanner.end() == []


def test_plain_text_starting_with_a_brace_is_not_held_to_the_end() -> None:
    scanner = TextCallScanner()
    assert scanner.feed("{") == []
    assert scanner.feed("x} then") == ["{x} then"]


BROKEN = [
    # (written, the call's name, words in the error)
    ('<tool_call>{"name": "weather", "arguments": {"city": ', "weather", "ended in the middle"),
    ("Sure <tool_call>", UNREADABLE, "ended in the middle"),
    (
        '<tool_call>{"name": "weather", "arguments": {"city": "Brest",,}}</tool_call>',
        "weather",
        "could not be read",
    ),
    ("<tool_call>weather(city='Brest')</tool_call>", UNREADABLE, "could not be read"),
    (
        '<tool_call>{"name": "weather", "arguments": [1]}</tool_call>',
        "weather",
        "must be a JSON object",
    ),
    ('<tool_call>{"arguments": {}}</tool_call>', UNREADABLE, 'no "name"'),
    ('<tool_call>{"name": "a b", "arguments": {}}</tool_call>', UNREADABLE, 'no "name"'),
    ("<|python_tag|>brave_search.call(query='x')", UNREADABLE, "it is not JSON"),
    ('<|python_tag|>{"name": "weather", "parameters": {', "weather", "ended in the middle"),
    ('{"name": "weather", "parameters": {"city"', "weather", "ended in the middle"),
    ("[TOOL_CALLS]weather", UNREADABLE, "ended in the middle"),
    ('[TOOL_CALLS]weather[ARGS]{"city": "Bre', "weather", "ended in the middle"),
    ("[TOOL_CALLS][]", UNREADABLE, "empty"),
]


@pytest.mark.parametrize(("written", "name", "words"), BROKEN)
def test_a_call_that_cannot_be_read_is_a_call_with_its_error(
    written: str, name: str, words: str
) -> None:
    for deltas in splits(written):
        shown, calls = scan(deltas)
        assert not shown.strip() or "<tool_call>" not in shown
        [call] = calls
        assert (call.name, call.arguments) == (name, "{}")
        assert words in call.problem and call.problem.startswith("error: ")


def test_trailing_commas_are_the_one_repair() -> None:
    assert loads_lenient('{"a": [1, 2,], "b": "x,}",}') == {"a": [1, 2], "b": "x,}"}
    assert drop_trailing_commas('{"s": "a,]", "t": "\\",}"}') == '{"s": "a,]", "t": "\\",}"}'
    with pytest.raises(ValueError, match="line 1"):
        loads_lenient('{"a": 1,, }')
    with pytest.raises(ValueError):
        loads_lenient("[1 2]")
    assert json.loads(drop_trailing_commas("[{},\n ]")) == [{}]
