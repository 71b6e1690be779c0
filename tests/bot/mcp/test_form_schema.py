"""The form a server asks for, read from its requested schema, and answers checked against it."""

from __future__ import annotations

from typing import Any

import pytest

from bot.mcp.form_schema import BadSchema, Form

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email"},
        "age": {"type": "integer", "minimum": 18, "maximum": 99, "default": 30},
        "score": {"type": "number", "maximum": 10.5},
        "ok": {"type": "boolean"},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l"}]},
        "tags": {
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b", "c"]},
            "minItems": 1,
            "maxItems": 2,
        },
        "when": {"type": "string", "format": "date"},
    },
    "required": ["email", "tags"],
}


def test_a_schema_is_read_into_fields() -> None:
    form = Form.read("hi", SCHEMA)
    kinds = {f.name: f.kind for f in form.fields}
    assert kinds == {
        "email": "string",
        "age": "integer",
        "score": "number",
        "ok": "boolean",
        "size": "choice",
        "tags": "choices",
        "when": "string",
    }
    size = next(f for f in form.fields if f.name == "size")
    assert [(o.value, o.title) for o in size.options] == [("s", "Small"), ("l", "l")]
    assert form.defaults() == {"age": 30}


def test_answers_as_typed_become_the_values_asked_for() -> None:
    form = Form.read("hi", SCHEMA)
    content, errors = form.check(
        {
            "email": "a@b.co",
            "score": "7.5",
            "ok": "yes",
            "size": "l",
            "tags": ["a", "b", "a"],
            "when": "2026-01-02",
        }
    )
    assert errors == {}
    assert content == {
        "email": "a@b.co",
        "age": 30,
        "score": 7.5,
        "ok": True,
        "size": "l",
        "tags": ["a", "b"],
        "when": "2026-01-02",
    }


def test_answers_that_do_not_fit_are_said_field_by_field() -> None:
    form = Form.read("hi", SCHEMA)
    _, errors = form.check(
        {
            "email": "nope",
            "age": "17",
            "score": "eleven",
            "ok": "maybe",
            "size": "m",
            "tags": ["a", "b", "c"],
            "when": "tomorrow",
            "extra": "x",
        }
    )
    assert errors == {
        "email": "must be an email address",
        "age": "must be at least 18",
        "score": "must be a number",
        "ok": "answer yes or no",
        "size": "pick one of: Small, l",
        "tags": "pick at most 2",
        "when": "must be a date (YYYY-MM-DD)",
        "extra": "the form has no field 'extra'",
    }
    _, missing = form.check({"age": "2.5"})
    assert missing == {
        "email": "this field is required",
        "tags": "this field is required",
        "age": "must be a whole number",
    }


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "array"}, "of type 'array', not object"),
        ({"properties": {"a": {"type": "object"}}}, "field 'a' is of type 'object'"),
        ({"properties": {"a": {"type": "string"}}, "required": ["b"]}, "does not describe: b"),
        ({"properties": {"a": {"type": "string", "enum": [1, 2]}}}, "not a list of texts"),
        ({"properties": {"a": {"type": "integer", "default": "x"}}}, "its default does not fit"),
        ({"properties": {"a": {"type": "string", "format": "ipv9"}}}, "unknown format"),
        ("nope", "not a JSON object"),
    ],
)
def test_a_schema_outside_the_subset_is_refused_with_the_reason(schema: Any, why: str) -> None:
    with pytest.raises(BadSchema, match=why.replace("(", r"\(").replace(")", r"\)")):
        Form.read("hi", schema)
