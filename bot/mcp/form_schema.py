"""The form an MCP server asks a person to fill in (``elicitation/create``, form mode): its
requested schema read into fields, and an answer checked against it before it goes back.

The schema is the spec's restricted subset: one flat object whose properties are a string
(``minLength``, ``maxLength``, ``format``: email, uri, date, date-time), a number or integer
(``minimum``, ``maximum``), a boolean, a single choice (``enum``, with ``enumNames`` or
``oneOf`` titles) or a multiple choice (``type: array`` of such choices, ``minItems``,
``maxItems``); ``required`` names the fields that must be given; ``default`` fills a field left
empty. A schema outside the subset (a nested object, an unknown type) is refused whole with the
reason, never guessed at.

Answers come from a form as text (what a person typed), a list of texts (a multiple choice) or
a boolean; :meth:`Form.check` turns them into the JSON values the server asked for, or says,
field by field, what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

Kind = Literal["string", "number", "integer", "boolean", "choice", "choices"]
Value = str | int | float | bool | list[str]
MAX_FIELDS = 50
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_YES = frozenset({"true", "yes", "y", "on", "1"})
_NO = frozenset({"false", "no", "n", "off", "0"})


class BadSchema(ValueError):
    """The requested schema is not one a form can show (the reason in words)."""


@dataclass(frozen=True, slots=True)
class Option:
    value: str
    title: str


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    kind: Kind
    title: str
    description: str = ""
    required: bool = False
    default: Value | None = None
    options: tuple[Option, ...] = ()
    min: float | None = None
    """Least length, value or number of choices."""
    max: float | None = None
    """Greatest length, value or number of choices."""
    format: str = ""

    def hint(self) -> str:
        """The field's limits in words (``from 1 to 10``, ``at most 40 characters``)."""
        parts: list[str] = []
        match self.kind:
            case "integer" | "number":
                parts.append(_range(self.min, self.max, "from", "").strip())
            case "string":
                if self.format:
                    parts.append(f"format: {self.format}")
                if self.min is not None or self.max is not None:
                    parts.append(_range(self.min, self.max, "", " characters").strip())
            case "choices":
                if self.min is not None or self.max is not None:
                    parts.append("pick" + _range(self.min, self.max, "", ""))
            case _:
                pass
        return "; ".join(p for p in parts if p)


def _range(low: float | None, high: float | None, lead: str, unit: str) -> str:
    def n(x: float) -> str:
        return f"{x:g}"

    if low is not None and high is not None:
        return f" {lead} {n(low)} to {n(high)}{unit}".replace("  ", " ")
    if low is not None:
        return f" at least {n(low)}{unit}"
    if high is not None:
        return f" at most {n(high)}{unit}"
    return ""


@dataclass(frozen=True, slots=True)
class Form:
    message: str
    fields: tuple[Field, ...] = field(default=())

    @classmethod
    def read(cls, message: str, schema: Any) -> Form:
        """The form ``schema`` describes; raises :class:`BadSchema`."""
        if not isinstance(schema, Mapping):
            raise BadSchema("the requested schema is not a JSON object")
        if schema.get("type", "object") != "object":
            raise BadSchema(f"the requested schema is of type {schema.get('type')!r}, not object")
        properties = schema.get("properties", {})
        if not isinstance(properties, Mapping):
            raise BadSchema("its properties are not a JSON object")
        if len(properties) > MAX_FIELDS:
            raise BadSchema(f"it asks for {len(properties)} fields (at most {MAX_FIELDS})")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise BadSchema("its required list is not a list of names")
        if unknown := sorted(set(required) - set(properties)):
            raise BadSchema(f"it requires fields it does not describe: {', '.join(unknown)}")
        fields = tuple(_field(str(n), p, n in required) for n, p in properties.items())
        return cls(message, fields)

    def defaults(self) -> dict[str, Value]:
        """The answer the schema's defaults make."""
        return {f.name: f.default for f in self.fields if f.default is not None}

    def check(self, given: Mapping[str, Any]) -> tuple[dict[str, Value], dict[str, str]]:
        """The answer as the server asked for it, and what is wrong, field by field (the answer
        may go back only when nothing is). A field left empty takes its default."""
        content: dict[str, Value] = {}
        errors: dict[str, str] = {}
        for f in self.fields:
            raw = given.get(f.name)
            if _empty(raw):
                if f.default is not None:
                    raw = f.default
                elif f.kind == "boolean" and f.name in given:
                    raw = False  # an unticked box
                elif f.required:
                    errors[f.name] = "this field is required"
                    continue
                else:
                    continue
            try:
                content[f.name] = _value(f, raw)
            except ValueError as exc:
                errors[f.name] = str(exc)
        if unknown := sorted(set(given) - {f.name for f in self.fields}):
            errors.setdefault(unknown[0], f"the form has no field {unknown[0]!r}")
        return content, errors


def _empty(raw: Any) -> bool:
    return raw is None or (isinstance(raw, str) and not raw.strip()) or raw == []


def _options(raw: Mapping[str, Any], where: str) -> tuple[Option, ...]:
    if isinstance(one_of := raw.get("oneOf", raw.get("anyOf")), list):
        found = []
        for item in one_of:
            if not isinstance(item, Mapping) or not isinstance(item.get("const"), str):
                raise BadSchema(f"{where}: a choice without a text const")
            found.append(Option(item["const"], str(item.get("title") or item["const"])))
        return tuple(found)
    enum = raw.get("enum")
    if not isinstance(enum, list) or not enum or not all(isinstance(e, str) for e in enum):
        raise BadSchema(f"{where}: its enum is not a list of texts")
    names = raw.get("enumNames")
    titles = names if isinstance(names, list) and len(names) == len(enum) else enum
    return tuple(Option(v, str(t)) for v, t in zip(enum, titles, strict=True))


def _number(raw: Mapping[str, Any], key: str, where: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadSchema(f"{where}: {key} is not a number")
    return float(value)


def _field(name: str, raw: Any, required: bool) -> Field:
    where = f"field {name!r}"
    if not isinstance(raw, Mapping):
        raise BadSchema(f"{where} is not described by a JSON object")
    kind, low, high, fmt, options = _shape(raw, where)
    built = Field(
        name,
        kind,
        str(raw.get("title") or name),
        str(raw.get("description") or ""),
        required,
        None,
        options,
        low,
        high,
        fmt,
    )
    if (default := raw.get("default")) is None:
        return built
    try:
        return replace(built, default=_value(built, default))
    except ValueError as exc:
        raise BadSchema(f"{where}: its default does not fit it ({exc})") from None


def _shape(
    raw: Mapping[str, Any], where: str
) -> tuple[Kind, float | None, float | None, str, tuple[Option, ...]]:
    """The field's kind, its least and greatest (length, value or count), format and choices."""
    kind = raw.get("type")
    if kind == "string" and ("enum" in raw or "oneOf" in raw or "anyOf" in raw):
        return "choice", None, None, "", _options(raw, where)
    if kind == "string":
        fmt = str(raw.get("format") or "")
        if fmt not in ("", "email", "uri", "date", "date-time"):
            raise BadSchema(f"{where}: unknown format {fmt!r}")
        low, high = _number(raw, "minLength", where), _number(raw, "maxLength", where)
        return "string", low, high, fmt, ()
    if kind == "number" or kind == "integer":
        low, high = _number(raw, "minimum", where), _number(raw, "maximum", where)
        return kind, low, high, "", ()
    if kind == "boolean":
        return "boolean", None, None, "", ()
    if kind == "array":
        items = raw.get("items")
        if not isinstance(items, Mapping):
            raise BadSchema(f"{where}: a list without items")
        low, high = _number(raw, "minItems", where), _number(raw, "maxItems", where)
        return "choices", low, high, "", _options(items, where)
    raise BadSchema(f"{where} is of type {kind!r}, which a form cannot ask for")


def _value(f: Field, raw: Any) -> Value:  # noqa: C901 (one case a kind)
    """``raw`` as the value ``f`` takes; raises ValueError with what is wrong."""
    match f.kind:
        case "boolean":
            if isinstance(raw, bool):
                return raw
            word = str(raw).strip().lower()
            if word in _YES or word in _NO:
                return word in _YES
            raise ValueError("answer yes or no")
        case "integer" | "number":
            number = _parse_number(raw, f.kind == "integer")
            if f.min is not None and number < f.min:
                raise ValueError(f"must be at least {f.min:g}")
            if f.max is not None and number > f.max:
                raise ValueError(f"must be at most {f.max:g}")
            return number
        case "choice":
            value = raw[0] if isinstance(raw, list) and len(raw) == 1 else raw
            found = _option(f, value) if isinstance(value, str) else None
            if found is None:
                raise ValueError("pick one of: " + ", ".join(o.title for o in f.options))
            return found
        case "choices":
            picked = (
                [p.strip() for p in raw.split(",") if p.strip()] if isinstance(raw, str) else raw
            )
            if not isinstance(picked, list) or not all(isinstance(p, str) for p in picked):
                raise ValueError("pick from the list")
            if bad := [p for p in picked if _option(f, p) is None]:
                raise ValueError(f"not a choice: {bad[0]}")
            picked = list(dict.fromkeys(str(_option(f, p)) for p in picked))
            if f.min is not None and len(picked) < f.min:
                raise ValueError(f"pick at least {f.min:g}")
            if f.max is not None and len(picked) > f.max:
                raise ValueError(f"pick at most {f.max:g}")
            return picked
        case "string":
            if not isinstance(raw, str):
                raise ValueError("must be text")
            if f.min is not None and len(raw) < f.min:
                raise ValueError(f"must be at least {f.min:g} characters")
            if f.max is not None and len(raw) > f.max:
                raise ValueError(f"must be at most {f.max:g} characters")
            _format(f.format, raw)
            return raw


def _option(f: Field, typed: str) -> str | None:
    """The choice ``typed`` names: its value, else its value or title in any case."""
    if typed in {o.value for o in f.options}:
        return typed
    folded = typed.strip().casefold()
    return next(
        (o.value for o in f.options if folded in (o.value.casefold(), o.title.casefold())), None
    )


def _parse_number(raw: Any, whole: bool) -> int | float:
    if isinstance(raw, bool):
        raise ValueError("must be a number")
    if isinstance(raw, int | float):
        number: float = raw
    else:
        try:
            number = float(str(raw).strip().replace(",", ""))
        except ValueError:
            raise ValueError("must be a whole number" if whole else "must be a number") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError("must be a finite number")
    if whole:
        if number != int(number):
            raise ValueError("must be a whole number")
        return int(number)
    return number


def _format(fmt: str, text: str) -> None:
    if fmt == "email" and not _EMAIL.match(text):
        raise ValueError("must be an email address")
    if fmt == "uri":
        parts = urlsplit(text)
        if not parts.scheme or not (parts.netloc or parts.path):
            raise ValueError("must be a URI (such as https://example.com)")
    if fmt == "date":
        try:
            date.fromisoformat(text)
        except ValueError:
            raise ValueError("must be a date (YYYY-MM-DD)") from None
    if fmt == "date-time":
        try:
            datetime.fromisoformat(text)
        except ValueError:
            raise ValueError("must be a date and time (YYYY-MM-DDTHH:MM:SS)") from None
