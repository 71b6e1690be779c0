"""What ``threadline doctor`` says about the tools that have settings of their own:
``fetch_url``, ``web_search``, the custom tools and the skills. Each line is (ok, words); ok is
None for information, False for something that does not work."""

from __future__ import annotations

import asyncio
import shlex

from bot.config import Settings
from bot.tools.base import ToolError
from bot.tools.commands import choose_runner
from bot.tools.http import Client
from bot.tools.skill_files import MAX_SKILL_BYTES, Catalog

Line = tuple[bool | None, str]
PROBE_TIMEOUT_S = 5.0


async def tool_checks(settings: Settings) -> list[Line]:
    return [
        _fetch_url(settings),
        await _web_search(settings),
        *_custom(settings),
        *_skills(settings),
    ]


def _fetch_url(settings: Settings) -> Line:
    options = settings.fetch_url
    if not options.enabled:
        return None, "fetch_url: off ([tools.fetch_url] enabled = false)"
    reach = (
        "any address (allow_private = true)" if options.allow_private else "public addresses only"
    )
    if options.allow_networks and not options.allow_private:
        reach += " and " + ", ".join(str(n) for n in options.allow_networks)
    listed = ", ".join(options.allow_domains)
    asks = (
        f"reads {listed} without asking, other domains ask first"
        if listed
        else "every domain asks first"
    )
    return None, f"fetch_url: {reach}; {asks}"


async def _web_search(settings: Settings) -> Line:
    options = settings.web_search
    provider = options.chosen
    if provider is None:
        return None, "web_search: not offered (no provider in [tools.web_search])"
    if provider != "searxng":
        return None, f"web_search: {provider}, key from {options.key_variable}"
    url = f"{str(options.endpoint or options.searxng_url).rstrip('/')}/search"
    try:
        async with asyncio.timeout(PROBE_TIMEOUT_S), Client() as http:
            answer = await http.request(
                "GET", url, params={"q": "threadline", "format": "json"}, limit=1_000_000
            )
        ok = answer.status == 200 and answer.content_type == "application/json"
        detail = (
            "answers in JSON"
            if ok
            else f"answered {answer.status} {answer.content_type} (is its JSON format enabled?)"
        )
    except TimeoutError:
        ok, detail = False, f"cannot be reached: no answer within {PROBE_TIMEOUT_S:g} s"
    except ToolError as exc:
        ok, detail = False, f"cannot be reached: {exc}"
    return ok, f"web_search: SearXNG at {options.searxng_url} {detail}"


def _custom(settings: Settings) -> list[Line]:
    lines: list[Line] = []
    runner = None
    for name, spec in settings.custom_tools.items():
        if not spec.enabled:
            lines.append((None, f"custom tool {name}: disabled"))
        elif spec.command is not None:
            runner = runner or choose_runner(settings)
            shown = shlex.join(spec.command)
            if runner is None:
                lines.append(
                    (
                        False,
                        f"custom tool {name}: not offered: commands cannot run here (see the sandbox line)",
                    )
                )
            else:
                network = " with network" if spec.network else ""
                lines.append((True, f"custom tool {name}: runs {shown} in the sandbox{network}"))
        elif spec.http is not None:
            lines.append((True, f"custom tool {name}: {spec.http.method} {spec.http.url}"))
    return lines


def _skills(settings: Settings) -> list[Line]:
    catalog = Catalog(settings.skills_path)
    found = catalog.skills()
    if not found and not catalog.left_out:
        return [
            (None, f"skills: none in {settings.skills_path} (add <name>/SKILL.md to offer one)")
        ]
    lines: list[Line] = [
        (None, f"skills in {settings.skills_path}: {', '.join(found) or 'none offered'}")
    ]
    for name, skill in found.items():
        if skill.size > MAX_SKILL_BYTES:
            lines.append(
                (
                    None,
                    f"skill {name}: {skill.size:,} bytes; only its first {MAX_SKILL_BYTES:,} are loaded",
                )
            )
    lines.extend(
        (False, f"skill {name} is not offered: {why}") for name, why in catalog.left_out.items()
    )
    return lines
