"""``threadline doctor``: plain words about what is configured and whether it answers."""

from __future__ import annotations

import random
import tempfile
import time
from zoneinfo import ZoneInfo

from adapters.http_port import check_port
from adapters.metering import describe_metrics
from adapters.model_check import check_model
from adapters.platforms import Platforms
from bot.config import Settings, approvers_told, every_approvers
from bot.engine.states import EngineConfig
from bot.errors import ModelError
from bot.files.intake import sees_images
from bot.files.kinds import size_words
from bot.files.pdf import PdfLimits
from bot.infra.clock import SystemClock
from bot.llm.messages import UserMessage
from bot.llm.model import Model, ModelRequest, TextPiece
from bot.llm.openai_model import build_openai_model
from bot.llm.routing import RoutedModel, describe_route, route_of
from bot.mcp.servers import probe as probe_mcp_servers
from bot.policy.words import access_lines, tool_lines
from bot.scheduler.when import local_time
from bot.thread.model_words import describe_models, model_warnings
from bot.thread.settings import REPLIES, describe_section
from bot.tools.builtin import builtin_tools
from bot.tools.commands import describe_sandbox
from bot.tools.doctor import tool_checks


def _line(ok: bool | None, text: str) -> None:
    mark = {True: "ok  ", False: "FAIL", None: "--  "}[ok]
    print(f"[{mark}] {text}", flush=True)


def _check_data_dir(settings: Settings) -> bool:
    try:
        settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=settings.data_dir):
            pass
    except OSError as exc:
        _line(False, f"data directory {settings.data_dir} is not writable: {exc.strerror}")
        return False
    _line(True, f"data directory {settings.data_dir.resolve()} is writable")
    return True


async def _check_store(settings: Settings) -> bool:
    if settings.database_url is None:
        _line(
            None, f"store: SQLite at {settings.database_path} (THREADLINE_DATABASE_URL is not set)"
        )
        return True
    from bot.storage.postgres.check import check_database

    ok, words = await check_database(settings.database_url.get_secret_value())
    _line(ok, f"store: {words}")
    return ok and _check_workers(settings)


TAKEOVER_GOAL_S = 15.0


def _check_workers(settings: Settings) -> bool:
    """Several workers may share the database: how soon a dead or hung one's threads are taken
    over."""
    poll, ttl = settings.worker_poll_s, settings.lease_ttl_s
    worst = ttl + poll
    words = (
        f"workers: any number may share this database; a worker that dies is known gone when its "
        f"connection ends, and its threads are taken over at another's next look, every {poll:g} s "
        f"(THREADLINE_WORKER_POLL_S); a thread's lease lasts {ttl:g} s (THREADLINE_LEASE_TTL_S): "
        f"a hung worker's threads are taken over within {worst:g} s"
    )
    if worst > TAKEOVER_GOAL_S:
        _line(
            None,
            f"{words}, longer than {TAKEOVER_GOAL_S:g} s: lower THREADLINE_LEASE_TTL_S to resume sooner",
        )
    else:
        _line(True, words)
    return True


def _api(settings: Settings) -> None:
    """Which of OpenAI's APIs the model is asked through."""
    if settings.uses_demo_model:
        return
    if settings.openai_api == "chat":
        words = "Chat Completions (/chat/completions)"
    else:
        words = (
            "the Responses API (/responses): nothing is stored at the provider (store: false), "
            "the model's reasoning is kept encrypted with each thread"
        )
    _line(None, f"model API: {words} (THREADLINE_OPENAI_API={settings.openai_api})")


async def _check_routes(settings: Settings) -> bool:
    """Each model with a route of its own, and each fallback: where it is asked, with which key
    (named, never shown), and whether it answers."""
    model = build_openai_model(settings, SystemClock(), rng=random.Random())
    if not isinstance(model, RoutedModel):
        return True
    if model.fallbacks:
        _line(
            None,
            f"fallbacks: when a thread's model has no quota, fails or cannot be reached, "
            f"{' then '.join(model.fallbacks)} (THREADLINE_FALLBACK_MODELS)",
        )
    ok = True
    try:
        own = [name for name, table in settings.per_model.items() if table.routed]
        for name in dict.fromkeys([*own, *model.fallbacks]):
            if name in own:
                where = describe_route(route_of(settings, name))
            else:
                where = f"model {name} on the default server"
            ok = await _probe(model.route(name), name, where) and ok
    finally:
        await model.aclose()
    return ok


async def _probe(model: Model, name: str, where: str) -> bool:
    """One short request to ``name`` through ``model``: a line saying whether it answered."""
    request = ModelRequest(
        system="You are a health check.",
        messages=[UserMessage(text="Reply with the single word OK.")],
        tools=(),
        max_tokens=5,
        model=name,
    )
    try:
        text = "".join([p.text async for p in model.stream(request) if isinstance(p, TextPiece)])
    except ModelError as exc:
        _line(False, f"{where}: {exc}")
        return False
    _line(True, f"{where} answered ({len(text)} characters)")
    return True


async def _check_platform(
    name: str, settings: Settings, platforms: Platforms
) -> list[tuple[bool | None, str]]:
    """The platform's own checks (tokens, scopes, intents); its SDK is imported only here."""
    if name == "Slack":
        from adapters.slack.doctor import check_slack

        return await check_slack(settings, platforms.slack)
    from adapters.discord.doctor import check_discord

    return await check_discord(platforms.discord)


def _schedules_and_memory(settings: Settings) -> None:
    """The zone scheduled times are read in (valid: the configuration loaded), and the limits."""
    zone = ZoneInfo(settings.timezone)
    every = settings.schedule_min_interval_s
    _line(
        True,
        f"scheduled prompts: times in {settings.timezone} (now {local_time(time.time(), zone)}); "
        f"at most {settings.schedules_per_thread} per thread and {settings.schedules_per_channel} "
        f"per channel, a recurring one at most once every {every:g} s",
    )
    _line(
        True,
        f"memory: at most {settings.memories_per_channel:,} per channel; the model sees the "
        f"{settings.memory_note_items} most recent (up to {settings.memory_note_chars:,} characters)",
    )
    sees = sees_images(settings.vision, settings.model, demo=settings.uses_demo_model)
    _line(
        True,
        f"files: shared files up to {size_words(settings.file_max_bytes)} go into the thread's "
        f"workspace (previews of {settings.file_preview_chars:,} characters); images "
        f"{'shown to' if sees else 'only described to'} "
        f"{'the model' if settings.uses_demo_model else settings.model} "
        f"(THREADLINE_VISION={settings.vision}), up to {size_words(settings.image_max_bytes)}; "
        f"a download may take {settings.file_download_seconds:g} s; a PDF is read in its own "
        f"process, at most {PdfLimits().pages} pages",
    )


def _sub_agents(settings: Settings) -> None:
    """What one ``delegate_task`` sub-agent may do."""
    tokens = settings.delegate_max_tokens
    capped = settings.run_max_tokens is not None and settings.run_max_tokens < tokens
    limit = (
        f"{settings.run_max_tokens:,} tokens (THREADLINE_RUN_MAX_TOKENS)"
        if capped
        else f"{tokens:,} tokens"
    )
    _line(
        True,
        f"sub-agents (delegate_task): each makes up to {settings.delegate_max_turns} model calls "
        f"and uses up to {limit}; {settings.delegate_max_concurrent} run at once per thread",
    )


def _answers(settings: Settings) -> None:
    """How long answers are shown, and how long a model server may ask the bot to wait."""
    _line(
        True,
        f"answers: past {settings.answer_file_after:,} characters the rest goes to a file, "
        f"answer.md (THREADLINE_ANSWER_FILE_AFTER); a wait the model server asks for is waited "
        f"out up to {settings.model_retry_after_max_s:g} s (THREADLINE_MODEL_RETRY_AFTER_MAX_S), "
        f"the thread told, within {settings.model_max_retries} retries",
    )


def _feedback(settings: Settings) -> None:
    """Whether answers carry 👍 / 👎, and where what people said is read."""
    if settings.feedback:
        words = (
            "feedback: on: 👍 / 👎 under each final answer, a 👎 asks what went wrong; "
            "read it with `threadline feedback`, counted as threadline_feedback_total"
        )
    else:
        words = "feedback: off (THREADLINE_FEEDBACK=on shows 👍 / 👎 under each final answer)"
    _line(None, words)


def read_channel_line(messages: int, chars: int) -> str:
    """What ``read_channel`` gives the model (THREADLINE_READ_CHANNEL_MESSAGES, _CHARS)."""
    if messages == 0:
        return "read_channel: off (THREADLINE_READ_CHANNEL_MESSAGES=0)"
    return (
        f"read_channel reads the thread's own channel: up to {messages} messages "
        f"({chars:,} characters); another channel the model names only when the bot is in it "
        "and the person asking is a member (Slack: channels:read, groups:read)"
    )


def _channels(settings: Settings) -> None:
    """The effective settings of each ``[channels."<prefix>"]`` section's threads."""
    base = EngineConfig.from_settings(settings)
    choices = ", ".join(settings.models) or "any name (the model server decides)"
    choose = f"/threadline model may choose {choices}; "
    if settings.uses_demo_model:  # the model check named it; a model's name means nothing to it
        model = choose if settings.models else ""
    else:
        model = f"model: {settings.model}; {choose}"
    _line(
        None,
        f"{model}a first mention in an existing thread reads up to "
        f"{settings.thread_history_messages} earlier messages "
        f"({settings.thread_history_chars:,} characters)",
    )
    _line(None, read_channel_line(settings.read_channel_messages, settings.read_channel_chars))
    _line(
        None,
        f"thread replies: {REPLIES[settings.thread_replies]} (THREADLINE_THREAD_REPLIES="
        f"{settings.thread_replies}; direct messages are always answered; /threadline quiet "
        "or the Quiet shortcut quiets one thread)",
    )
    for prefix in sorted(settings.channels):
        lines = describe_section(settings, prefix, base)
        _line(None, f"{lines[0]} " + "; ".join(line.strip() for line in lines[1:]))


def _model_settings(settings: Settings) -> None:
    """The effective context window, answer cap and sampling, and what looks mistaken."""
    base = EngineConfig.from_settings(settings)
    for text in describe_models(settings, base):
        _line(None, text)
    for text in model_warnings(settings, base):
        _line(None, f"warning: {text}")


def _policy(settings: Settings) -> bool:
    """Who can talk to the bot, use each tool that changes something, and approve it; False
    when an approvers setting cannot work."""
    for text in [*access_lines(settings.access), *tool_lines(settings, builtin_tools(settings))]:
        _line(None, f"policy: {text}")
    found = notice_lines(settings)
    for ok, text in found:
        _line(ok, text)
    return all(ok is not False for ok, _ in found)


def notice_lines(settings: Settings) -> list[tuple[bool | None, str]]:
    """Whom approvals tell by direct message, and escalations that could never happen."""
    lines: list[tuple[bool | None, str]] = []
    if approvers_told(settings):
        most = settings.approval_notify_max
        lines.append(
            (
                None,
                f"approvals: up to {most} approvers told by direct message when the person "
                "who asked may not decide, and at an escalation "
                "(THREADLINE_APPROVAL_NOTIFY_MAX; Slack: im:write; on Discord a role's members "
                "are told only once the bot has seen them)"
                if most
                else "approvals: nobody is told by direct message (THREADLINE_APPROVAL_NOTIFY_MAX=0)",
            )
        )
    for where, chosen in every_approvers(settings):
        after = chosen.escalate_after
        if after is not None and after >= settings.approval_ttl_s:
            lines.append(
                (
                    False,
                    f"approvers of {where}: escalate_after ({after:g} s) is not before a "
                    f"request expires (approval_ttl_s {settings.approval_ttl_s:g} s): it never "
                    "escalates",
                )
            )
    return lines


async def run_doctor(settings: Settings, platforms: Platforms) -> int:
    _line(True, "configuration is valid")
    ok = _check_data_dir(settings)
    ok = await _check_store(settings) and ok
    _api(settings)
    said = await check_model(settings)
    for good, words in said:
        _line(good, words)
    ok = said[0][0] is True and ok
    ok = await _check_routes(settings) and ok
    _line(
        None,
        f"text tool calls: {'on' if settings.text_tool_calls else 'off'} (THREADLINE_TEXT_TOOL_CALLS)",
    )
    free, words = await check_port(settings)
    _line(free, words)
    ok = ok and free is not False
    sandboxed, words = describe_sandbox(settings)
    _line(sandboxed, words)
    ok = ok and sandboxed is not False
    for name, configured in (
        ("Slack", platforms.slack.configured),
        ("Discord", platforms.discord.configured),
    ):
        if not configured:
            _line(None, f"{name}: not configured")
            continue
        for passed, text in await _check_platform(name, settings, platforms):
            _line(passed, f"{name}: {text}")
            ok = ok and passed is not False
    for passed, text in await probe_mcp_servers(settings, SystemClock()):
        _line(passed, text)
        ok = ok and passed is not False
    for passed, text in await tool_checks(settings):  # fetch_url, web_search, custom tools, skills
        _line(passed, text)
        ok = ok and passed is not False
    if settings.playground_enabled(platforms.configured):
        from adapters.playground.doctor import check_playground

        for passed, text in check_playground(settings):
            _line(passed, text)
            ok = ok and passed is not False
    _line(*describe_metrics(settings))
    _schedules_and_memory(settings)
    _sub_agents(settings)
    _answers(settings)
    _feedback(settings)
    _model_settings(settings)
    _channels(settings)
    ok = _policy(settings) and ok
    print("all checks passed" if ok else "some checks failed", flush=True)
    return 0 if ok else 1
