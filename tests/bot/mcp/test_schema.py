"""Names and schemas an MCP server lists, made acceptable to a model API (bot/mcp/schema.py)
and read tool by tool (bot/mcp/endpoint.py)."""

from __future__ import annotations

import json
from typing import Any

from bot.mcp.endpoint import remote_tools
from bot.mcp.schema import MAX_DESCRIPTION, MAX_NODES, description, fix_schema, offered_names
from bot.tools.base import NAME_PATTERN


def test_valid_names_keep_their_form_and_others_are_fixed_up_deterministically() -> None:
    names = ["lookup", "get ticket!", "look.up", "look_up", "日本", "x" * 80, ""]
    first = offered_names("tickets", names)
    assert first == offered_names("tickets", list(reversed(names)))  # order does not matter
    assert first["tickets__lookup"] == "lookup"
    assert first["tickets__look_up"] == "look_up"  # the valid one keeps its name
    assert first["tickets__look_up_2"] == "look.up"
    assert first["tickets__get_ticket_"] == "get ticket!"
    assert first["tickets____"] == "日本"
    assert first["tickets__tool"] == ""
    assert all(NAME_PATTERN.match(n) for n in first)
    assert len(first) == len(names)


def test_names_cut_to_fit_stay_distinct() -> None:
    long = ["a" * 70 + "1", "a" * 70 + "2", "a" * 70 + "3"]
    offered = offered_names("a-long-server-name", long)
    assert len(offered) == 3 and all(NAME_PATTERN.match(n) and len(n) <= 64 for n in offered)


def test_nested_refs_are_inlined() -> None:
    schema = {
        "type": "object",
        "properties": {"filter": {"$ref": "#/$defs/Filter", "description": "what to find"}},
        "$defs": {
            "Filter": {"type": "object", "properties": {"status": {"$ref": "#/$defs/Status"}}},
            "Status": {"type": "string", "enum": ["open", "closed"]},
        },
    }
    fixed = fix_schema(schema)
    assert fixed.schema == {
        "type": "object",
        "properties": {
            "filter": {
                "type": "object",
                "properties": {"status": {"type": "string", "enum": ["open", "closed"]}},
                "description": "what to find",
            }
        },
    }
    assert fixed.notes == ["its $refs were inlined"]


def test_a_recursive_ref_is_cut_and_the_tool_still_offered() -> None:
    schema = {"type": "object", "properties": {"node": {"$ref": "#"}}}
    fixed = fix_schema(schema)
    assert fixed.schema is not None and "$ref" not in json.dumps(fixed.schema)
    assert "refers to itself" in "; ".join(fixed.notes)


def test_a_ref_explosion_keeps_the_tool_from_being_offered() -> None:
    defs: dict[str, Any] = {"L0": {"type": "string"}}
    for level in range(1, 8):
        below = {"$ref": f"#/$defs/L{level - 1}"}
        defs[f"L{level}"] = {"type": "object", "properties": {str(i): below for i in range(8)}}
    fixed = fix_schema(
        {"type": "object", "properties": {"x": {"$ref": "#/$defs/L7"}}, "$defs": defs}
    )
    assert fixed.schema is None
    assert fixed.notes == [f"its input schema passes {MAX_NODES} nodes once its $refs are inlined"]


def test_other_repairs_and_refusals() -> None:
    assert fix_schema(None).schema == {"type": "object", "properties": {}}
    assert fix_schema({"properties": {"q": {"type": "string"}}}).schema == {
        "properties": {"q": {"type": "string"}},
        "type": "object",
    }
    assert fix_schema({"type": "object", "properties": {"t": {"type": "array"}}}).schema == {
        "type": "object",
        "properties": {"t": {"type": "array", "items": {}}},
    }
    assert fix_schema({"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}).schema == {
        "type": "object",
        "properties": {"a": {}},
    }
    assert fix_schema({"type": "object", "$schema": "x", "$id": "y"}).schema == {"type": "object"}
    assert fix_schema({"type": "string"}).schema is None
    assert fix_schema(["not", "an", "object"]).schema is None
    assert fix_schema({"type": "object", "default": {"$ref": "#/kept"}}).schema == {
        "type": "object",
        "default": {"$ref": "#/kept"},  # data, not a schema
    }


def test_descriptions_are_capped_and_never_empty() -> None:
    assert description("  ", "lookup") == "lookup"
    assert len(description("d" * 5000, "x")) == MAX_DESCRIPTION


def test_a_listing_is_read_tool_by_tool() -> None:
    tools, problems = remote_tools(
        [
            {
                "name": "ok",
                "inputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": True},
            },
            {"name": "titled", "annotations": {"title": "A title"}},
            {"description": "no name"},
            "not an object",
            {"name": "cautious", "annotations": {"readOnlyHint": "yes"}},
        ]
    )
    assert [(t.name, t.read_only, t.description) for t in tools] == [
        ("ok", True, ""),
        ("titled", False, "A title"),
        ("cautious", False, ""),
    ]
    assert problems == ["entry 2 has no name: skipped", "entry 3 has no name: skipped"]
    assert remote_tools({"tools": "?"}) == ([], ["the answer has no list of tools"])
