"""The reference pages' tables, generated from the code each time the site is built.

An MkDocs hook (``hooks:`` in ``mkdocs.yml``): a page that holds ``<!-- generated: NAME -->``
gets, in its place, what ``RENDERERS[NAME]`` renders now:

- ``settings``: the settings models (:class:`bot.config.Settings` and each adapter's) as tables:
  environment variable, type, default, description;
- ``toml``: every ``threadline.toml`` section, walked from the pydantic models of its sections;
- ``cli``: the ``threadline`` command, from its argparse parser.

Descriptions are the fields' docstrings; a field without one takes its line from
``descriptions.toml`` beside this file (an entry there that names no field stops the build).
Nothing here is written by hand, so the pages cannot drift from the code.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import re
import sys
import textwrap
import tomllib
import types
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:  # mkdocs run from a checkout without the package installed
    sys.path.insert(0, str(ROOT))

from adapters.discord.config import DiscordSettings  # noqa: E402
from adapters.slack.config import SlackSettings  # noqa: E402
from bot.config import TOOL_SECTIONS, Settings, SettingsBase, ToolSettings  # noqa: E402

MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->")
SETTINGS_MODELS: list[tuple[str, type[SettingsBase]]] = [
    ("The core", Settings),
    ("Slack", SlackSettings),
    ("Discord", DiscordSettings),
]
PLACEHOLDERS = {
    "tools": "TOOL",
    "channels": '"PREFIX"',
    "per_model": '"NAME"',
    "mcp_servers": "SERVER",
    "custom_tools": "NAME",
    "parameters": "PARAMETER",
    "gating": "TOOL",
}
"""How a section keyed by a name is written in the reference (``[mcp_servers.SERVER]``)."""
_GROUP = re.compile(r"^\s*# --- (.+) ---\s*$")
_ROLE = re.compile(r":(?:class|meth|func|attr|mod):`~?([^`]+)`")


# --- the models, read ---


@cache
def attribute_docstrings(cls: type) -> dict[str, str]:
    """Each field's docstring (the string right below it), through the class's bases."""
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass in (object, BaseModel) or not issubclass(klass, BaseModel):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in zip(body, [*body[1:], None], strict=True):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                found[node.target.id] = inspect.cleandoc(after.value.value)
    return found


def field_groups(cls: type) -> dict[str, str]:
    """Each field's group, from the ``# --- model ---`` comments above it in the class."""
    lines, _ = inspect.getsourcelines(cls)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    starts = {
        n.target.id: n.lineno
        for n in tree.body[0].body  # type: ignore[attr-defined]
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    marks = [(i + 1, m.group(1)) for i, line in enumerate(lines) if (m := _GROUP.match(line))]
    return {
        name: next((g for at, g in reversed(marks) if at < line), "")
        for name, line in starts.items()
    }


@cache
def supplement() -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = tomllib.loads(
        (HERE / "descriptions.toml").read_text(encoding="utf-8")
    )
    return found


def description(cls: type[BaseModel], name: str) -> str:
    text = attribute_docstrings(cls).get(name)
    if text is None:
        for klass in cls.__mro__:
            text = supplement().get(klass.__name__, {}).get(name)
            if text is not None:
                break
    return markdown(text or "")


def markdown(text: str) -> str:
    """A docstring as one Markdown table cell."""
    text = _ROLE.sub(r"``\1``", text).replace("``", "`")
    return " ".join(text.split()).replace("|", "\\|")


def nested(annotation: Any) -> tuple[type[BaseModel], bool] | None:
    """The model a field holds (and whether by name, as ``dict[str, Model]``), if it does."""
    for candidate in _members(annotation):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate, False
        if get_origin(candidate) is dict:
            value = get_args(candidate)[1]
            if isinstance(value, type) and issubclass(value, BaseModel):
                return value, True
    return None


def _members(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) in (Union, types.UnionType):
        return tuple(a for a in get_args(annotation) if a is not type(None))
    return (annotation,)


def type_text(annotation: Any, info: FieldInfo) -> str:
    shown = " or ".join(_type_name(a) for a in _members(annotation))
    bounds = _bounds(info)
    return f"{shown} ({bounds})" if bounds else shown


def _type_name(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return ", ".join(f"`{a}`" for a in args)
    if origin in (list, frozenset, set, tuple):
        return f"list of {' or '.join(_type_name(a) for a in _members(args[0]))}"
    if origin is dict:
        return f"table of {_type_name(args[1])}"
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in _members(annotation))
    names = {SecretStr: "secret", Path: "path", str: "string", float: "number", int: "integer"}
    if annotation in names:
        return names[annotation]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    return {"bool": "boolean", "IPvAnyNetwork": "IP network"}.get(
        getattr(annotation, "__name__", ""), str(annotation)
    )


def _bounds(info: FieldInfo) -> str:
    found = {}
    for meta in info.metadata:
        for kind in ("ge", "gt", "le", "lt", "min_length", "max_length"):
            if isinstance(getattr(meta, kind, None), int | float):
                found[kind] = getattr(meta, kind)
    low = ("≥", found["ge"]) if "ge" in found else ("&gt;", found["gt"]) if "gt" in found else None
    high = ("≤", found["le"]) if "le" in found else ("&lt;", found["lt"]) if "lt" in found else None
    if low and high and low[0] == "≥" and high[0] == "≤":
        return f"{_number(low[1])}–{_number(high[1])}"
    parts = [f"{bound[0]} {_number(bound[1])}" for bound in (low, high) if bound]
    if "max_length" in found:
        parts.append(f"at most {found['max_length']} long")
    return ", ".join(parts)


def _number(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) and abs(value) >= 10_000 else str(value)


def default_text(info: FieldInfo) -> str:
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    elif info.default is PydanticUndefined:
        return "required"
    else:
        value = info.default
    if value is None:
        return "—"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, BaseModel):
        return "—"
    if isinstance(value, list | tuple | frozenset | dict) and not value:
        return "`{}`" if isinstance(value, dict) else "`[]`"
    if isinstance(value, int | float):
        shown = f"`{_number(value).replace(',', '')}`"
        mib = value / 1024**2
        return f"{shown} ({mib:g} MiB)" if value >= 1024**2 and mib.is_integer() else shown
    return f"`{value}`"


def setting_fields(cls: type[SettingsBase]) -> Iterator[tuple[str, FieldInfo]]:
    """The fields set by a variable (not the ``threadline.toml`` sections)."""
    for name, info in cls.model_fields.items():
        if nested(info.annotation) is None:
            yield name, info


def env_name(cls: type[SettingsBase], name: str) -> str:
    alias = cls.model_fields[name].validation_alias
    choices = getattr(alias, "choices", None)
    if choices and isinstance(choices[0], str):
        return choices[0]
    prefix = str(cls.model_config.get("env_prefix") or "")
    return f"{prefix}{name}".upper()


# --- the pages' tables ---


def row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def settings() -> str:
    out: list[str] = []
    for title, cls in SETTINGS_MODELS:
        out += [f"## {title}", ""]
        groups = field_groups(cls)
        shown = ""
        for name, info in setting_fields(cls):
            if groups.get(name, "") != shown or not out[-1]:
                shown = groups.get(name, "")
                if shown:
                    out += ["", f"### {shown[0].upper()}{shown[1:]}", ""]
                out += [
                    row("variable", "type", "default", "description"),
                    row("---", "---", "---", "---"),
                ]
            out.append(
                row(
                    f"`{env_name(cls, name)}`",
                    type_text(info.annotation, info),
                    default_text(info),
                    description(cls, name),
                )
            )
        out.append("")
    return "\n".join(out)


def toml_sections() -> Iterator[tuple[str, type[BaseModel], list[str]]]:
    """``(section, model, keys)`` for every ``threadline.toml`` section, walked from the models."""

    def walk(
        path: str, cls: type[BaseModel], skip: set[str]
    ) -> Iterator[tuple[str, Any, list[str]]]:
        keys = [n for n in cls.model_fields if n not in skip]
        yield path, cls, keys
        for name, info in cls.model_fields.items():
            if name in skip or (found := nested(info.annotation)) is None:
                continue
            inner, by_name = found
            below = f"{path}.{name}" + (f".{PLACEHOLDERS.get(name, 'NAME')}" if by_name else "")
            yield from walk(below, inner, set())
            if inner is ToolSettings and path == "":
                for tool, special in TOOL_SECTIONS.items():
                    own = set(special.model_fields) - set(ToolSettings.model_fields)
                    yield from walk(f"tools.{tool}", special, set(special.model_fields) - own)

    for path, cls, keys in walk("", Settings, {n for n, _ in setting_fields(Settings)}):
        if path:
            yield path.lstrip("."), cls, keys


def toml() -> str:
    out: list[str] = []
    seen: dict[type[BaseModel], str] = {}
    for path, cls, keys in toml_sections():
        out += [f"## `[{path}]`", ""]
        doc = inspect.getdoc(cls) or ""
        if doc and not doc.startswith(("A base class", "Usage docs")):
            out += [markdown(doc).replace("\\|", "|"), ""]
        if cls in seen:
            out += [f"The same keys as [`[{seen[cls]}]`](#{_anchor(seen[cls])}).", ""]
            continue
        seen[cls] = path
        out += [row("key", "type", "default", "description"), row("---", "---", "---", "---")]
        for name in keys:
            info = cls.model_fields[name]
            kind = type_text(info.annotation, info)
            if (inner := nested(info.annotation)) is not None:
                below = f"{path}.{name}" + (
                    f".{PLACEHOLDERS.get(name, 'NAME')}" if inner[1] else ""
                )
                kind = f"[{'tables' if inner[1] else 'table'}](#{_anchor(below)})"
            out.append(row(f"`{name}`", kind, default_text(info), description(cls, name)))
        out.append("")
    return "\n".join(out)


def _anchor(path: str) -> str:
    """The anchor MkDocs gives the heading of ``[path]``."""
    return re.sub(r"[^a-z0-9_-]+", "", re.sub(r"[\s.]+", "", path.lower())) or "section"


def cli() -> str:
    from adapters.cli import _parser

    parser = _parser()
    out = ["## `threadline`", "", "```text", _help(parser).rstrip(), "```", ""]
    for path, helped, sub in _commands(parser, "threadline"):
        out += [f"## `{path}`", "", _sentence(helped), ""]
        out += ["```text", _help(sub).rstrip(), "```", ""]
        options = [
            a
            for a in sub._actions
            if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
        ]
        if options:
            out += [row("option", "value", "default", "meaning"), row("---", "---", "---", "---")]
            for option in options:
                value = option.metavar or (option.type.__name__ if option.type else "TEXT")
                default = "—" if option.default in (None, "") else f"`{option.default}`"
                out.append(
                    row(
                        ", ".join(f"`{o}`" for o in option.option_strings) or f"`{option.dest}`",
                        f"`{value}`",
                        default,
                        markdown(option.help or ""),
                    )
                )
            out.append("")
    return "\n".join(out)


def _commands(
    parser: argparse.ArgumentParser, path: str
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """Each subcommand under ``parser`` (``threadline mcp try`` too): its path, help, parser."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help or "" for a in action._choices_actions}
        for name, sub in action.choices.items():
            yield f"{path} {name}", helps.get(name, ""), sub
            yield from _commands(sub, f"{path} {name}")


def _sentence(text: str) -> str:
    text = markdown(text)
    return f"{text[:1].upper()}{text[1:]}." if text else ""


def _help(parser: argparse.ArgumentParser) -> str:
    """The help text at a fixed width, whatever terminal builds the site."""
    parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=90)
    return parser.format_help()


RENDERERS: dict[str, Callable[[], str]] = {"settings": settings, "toml": toml, "cli": cli}


def check_supplement() -> None:
    """Each entry of ``descriptions.toml`` names a field of a model the pages show."""
    shown = [cls for _, cls in SETTINGS_MODELS] + [cls for _, cls, _ in toml_sections()]
    models = {
        klass.__name__: klass
        for cls in shown
        for klass in cls.__mro__
        if issubclass(klass, BaseModel) and klass.model_fields
    }
    for owner, entries in supplement().items():
        if owner not in models:
            raise ValueError(f"docs/gen/descriptions.toml: [{owner}] is no settings model")
        for name in entries:
            if name not in models[owner].model_fields:
                raise ValueError(f"docs/gen/descriptions.toml: {owner} has no field {name!r}")


def render(markdown_text: str) -> str:
    """A page's Markdown with each marker replaced by its generated content."""
    return MARKER.sub(lambda m: RENDERERS[m.group(1)](), markdown_text)


# --- the MkDocs hook ---


def on_pre_build(config: Any, **kwargs: Any) -> None:
    check_supplement()


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any, **kwargs: Any) -> str:
    return render(markdown)
