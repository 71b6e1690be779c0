"""``threadline doctor`` for Slack: does the token work, are the scopes granted, can it connect."""

from __future__ import annotations

from urllib.parse import urlsplit

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.api import auth_problem, build_client, error_code
from adapters.slack.config import EVENTS_PATH, SLACK_API, SlackConfig, SlackSettings
from adapters.slack.people import configured_groups
from adapters.slack.scopes import (
    APP_TOKEN_SCOPE,
    ASSISTANT_SCOPE,
    BOT_SCOPES,
    DM_SCOPE,
    FEATURES,
    GROUP_SCOPE,
    OPTIONAL_SCOPES,
)
from adapters.slack.surface import POST_WINDOW
from bot.api.kit import unreachable_reason
from bot.api.shortcuts import SHORTCUTS, callback_id
from bot.config import Settings, approvers_told
from bot.errors import ConfigError

Line = tuple[bool | None, str]
UNREACHABLE = (SlackClientError, aiohttp.ClientError, TimeoutError)


async def check_slack(settings: Settings, slack_settings: SlackSettings) -> list[Line]:
    try:
        config = SlackConfig.from_settings(slack_settings)
    except ConfigError as exc:
        return [(False, str(exc))]
    where = _where(config)
    lines: list[Line] = []
    if where:
        lines.append((None, f"using the Slack Web API{where} (SLACK_API_URL)"))
    async with aiohttp.ClientSession() as session:
        client = build_client(config.bot_token.get_secret_value(), config.api_url, session)
        try:
            response = await client.auth_test()
        except SlackApiError as exc:
            return [*lines, (False, f"SLACK_BOT_TOKEN: {auth_problem(error_code(exc))}")]
        except UNREACHABLE as exc:
            return [
                *lines,
                (False, f"could not reach the Slack API{where}: {_reason(exc, config)}"),
            ]
        lines.append(
            (
                True,
                f"bot token works: @{response.get('user')} in workspace "
                f"{response.get('team')} ({response.get('team_id')})",
            )
        )
        wanted = BOT_SCOPES | ({GROUP_SCOPE} if configured_groups(settings) else set())
        lines.append(_scopes(response.headers.get("x-oauth-scopes"), wanted))
        if optional := _optional(response.headers.get("x-oauth-scopes")):
            lines.append(optional)
        lines.extend(_ai_surfaces(response.headers.get("x-oauth-scopes"), config))
        if told := _direct_messages(settings, response.headers.get("x-oauth-scopes")):
            lines.append(told)
        lines.append(_shortcuts())
        lines.append(_streaming(config))
        lines.append(_edit_budget(settings, config))
        lines.append(_post_budget(config))
        if config.app_token is not None:
            lines.append(await _socket_mode(client, config.app_token.get_secret_value(), config))
        else:
            lines.append(
                (
                    None,
                    "HTTP mode (no SLACK_APP_TOKEN): point Event Subscriptions and "
                    f"Interactivity at https://<your public host>{EVENTS_PATH}; this server "
                    f"listens on {settings.http_host}:{settings.http_port}",
                )
            )
    return lines


def _scopes(header: str | None, wanted: frozenset[str]) -> Line:
    if header is None:
        return (None, "Slack did not list the token's scopes (no x-oauth-scopes header)")
    granted = {s.strip() for s in header.split(",") if s.strip()}
    missing = sorted(wanted - granted)
    if missing:
        named = [
            f"{scope} ({FEATURES[scope]})" if scope in FEATURES else scope for scope in missing
        ]
        return (
            False,
            f"missing scopes: {', '.join(named)} — add them under OAuth & Permissions "
            "(or recreate the app from deploy/slack-manifest.*.yaml) and reinstall the app",
        )
    return (True, f"all {len(wanted)} scopes the bot needs are granted")


def _optional(header: str | None) -> Line | None:
    """The optional scopes not granted, and what goes without them (None: all granted)."""
    granted = {s.strip() for s in (header or "").split(",")}
    missing = [f"{scope} ({why})" for scope, why in OPTIONAL_SCOPES.items() if scope not in granted]
    if header is None or not missing:
        return None
    return (None, f"optional scopes not granted, the bot goes without: {'; '.join(missing)}")


def _direct_messages(settings: Settings, header: str | None) -> Line | None:
    """Whether approvals can tell their approvers by direct message (None: none configured)."""
    if not approvers_told(settings) or not settings.approval_notify_max or header is None:
        return None
    if DM_SCOPE in {s.strip() for s in header.split(",")}:
        return (True, f"approvers can be told by direct message ({DM_SCOPE} is granted)")
    return (
        False,
        f"missing scope {DM_SCOPE}: the approvers threadline.toml lists cannot be told by "
        "direct message (the card in the thread still names them); add it under OAuth & "
        "Permissions and reinstall the app",
    )


async def _socket_mode(client: AsyncWebClient, app_token: str, config: SlackConfig) -> Line:
    where = _where(config)
    try:
        await client.apps_connections_open(app_token=app_token)
    except SlackApiError as exc:
        code = error_code(exc)
        if code == "missing_scope":
            return (
                False,
                f"SLACK_APP_TOKEN lacks the {APP_TOKEN_SCOPE} scope (Basic Information → App-Level Tokens)",
            )
        return (False, f"SLACK_APP_TOKEN: {auth_problem(code)}; Socket Mode cannot connect")
    except UNREACHABLE as exc:
        return (
            False,
            f"could not reach the Slack API{where} to open Socket Mode: {_reason(exc, config)}",
        )
    return (True, "app token works: Socket Mode can connect")


def _ai_surfaces(header: str | None, config: SlackConfig) -> list[Line]:
    """Slack's AI app surfaces: assistant threads (their scope, checked) and the Home tab
    (an app setting, said)."""
    granted = {s.strip() for s in (header or "").split(",")}
    prompts = (
        f"{len(config.suggested_prompts)} from THREADLINE_SLACK_SUGGESTED_PROMPTS"
        if config.suggested_prompts
        else "chosen by the bot's tools"
    )
    if header is None:
        assistant: Line = (None, "assistant threads: could not check the assistant:write scope")
    elif ASSISTANT_SCOPE in granted:
        assistant = (
            True,
            f"assistant threads: suggested prompts ({prompts}) and titles from the first "
            f"question ({ASSISTANT_SCOPE} granted; Agents & AI Apps must be on in the app's "
            "settings, with the assistant_thread_started event)",
        )
    else:
        assistant = (
            None,
            f"assistant threads: {ASSISTANT_SCOPE} not granted, so no suggested prompts or "
            "titles; answers are unchanged (add the scope and reinstall to have them)",
        )
    home = (
        None,
        "App Home: the Home tab shows the tools, a person's recent threads and the approvals "
        "waiting for them when the app enables it (App Home → Home Tab) and subscribes to "
        "app_home_opened, as deploy/slack-manifest.*.yaml do; it needs no scope, and a bot "
        "token cannot check the setting",
    )
    return [assistant, home]


def _shortcuts() -> Line:
    """The message shortcuts the app must declare (a bot token cannot read the app's
    settings, so this is said, not checked)."""
    ids = ", ".join(callback_id(s) for s in SHORTCUTS)
    return (
        None,
        f"message shortcuts (commands inside threads): the app must declare {ids} under "
        "Interactivity & Shortcuts, as deploy/slack-manifest.*.yaml do; a bot token cannot "
        "check that, so compare once with the manifest",
    )


def _streaming(config: SlackConfig) -> Line:
    """What ``THREADLINE_SLACK_STREAMING`` makes of answers."""
    if config.streaming == "edit":
        return (None, "answers stream by editing one message (THREADLINE_SLACK_STREAMING=edit)")
    how = (
        "whenever Slack allows"
        if config.streaming == "native"
        else "when a stream can start at once"
    )
    return (
        True,
        f"answers stream natively with chat.startStream {how}, edits otherwise "
        f"(THREADLINE_SLACK_STREAMING={config.streaming}; {config.stream_starts_per_minute:g} "
        f"starts and {config.stream_appends_per_minute:g} appends a minute, rollover after "
        f"{config.stream_max_age:g} s)",
    )


TIER_3 = 50.0
"""``chat.update`` calls a minute Slack allows a workspace."""


def _edit_budget(settings: Settings, config: SlackConfig) -> Line:
    """How fast replies may be edited, and who shares that budget."""
    who = (
        "shared by every worker on THREADLINE_DATABASE_URL (the database paces them together)"
        if settings.database_url is not None
        else "for this one process (SQLite)"
    )
    words = (
        f"edits: {config.edits_per_minute:g} chat.update a minute for the workspace "
        f"(THREADLINE_SLACK_EDITS_PER_MINUTE), {who}"
    )
    if config.edits_per_minute > TIER_3:
        return (None, f"{words}; Slack allows about {TIER_3:g}: expect 429s and slower replies")
    return (True, words)


POSTS_PER_CHANNEL = 60.0
"""``chat.postMessage`` calls a minute Slack allows in one channel (about one a second)."""


def _post_budget(config: SlackConfig) -> Line:
    """How fast replies may post in one channel."""
    words = (
        f"posts: {config.posts_per_minute:g} chat.postMessage a minute in each channel "
        f"(THREADLINE_SLACK_POSTS_PER_MINUTE), at most {POST_WINDOW} in any "
        f"{POST_WINDOW * 60 / config.posts_per_minute:.1f} s"
    )
    if config.posts_per_minute > POSTS_PER_CHANNEL:
        return (
            None,
            f"{words}; Slack allows about one a second: expect 429s and slower first words",
        )
    return (True, words)


def _where(config: SlackConfig) -> str:
    """`` at URL`` when ``SLACK_API_URL`` points elsewhere than Slack's own Web API."""
    return "" if config.api_url == SLACK_API else f" at {config.api_url}"


def _reason(exc: BaseException, config: SlackConfig) -> str:
    """Why the Web API did not answer, in a sentence."""
    host = urlsplit(config.api_url).hostname or config.api_url
    reason = unreachable_reason(exc, host)
    if reason is None and isinstance(exc, TimeoutError):
        return "it did not answer in time"
    return reason or str(exc) or type(exc).__name__
