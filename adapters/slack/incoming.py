"""Slack's message markup → the plain text the model reads.

Slack writes ``<@U123>`` for a person, ``<#C123|general>`` for a channel, ``<!here>`` for a
broadcast, ``<https://x|label>`` for a link and escapes ``& < >``. The model gets ``@Ada``,
``#general``, ``@here``, ``label (https://x)`` and the plain characters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_USER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#([CGD][A-Z0-9]+)(?:\|([^>]*))?>")
_SPECIAL = re.compile(r"<!([a-z]+)(?:\^[^|>]*)?(?:\|([^>]*))?>")
_LINK = re.compile(r"<((?:https?|mailto|tel):[^|>]+)(?:\|([^>]*))?>")


def mentioned_users(text: str) -> set[str]:
    """The user ids mentioned in ``text``."""
    return {m.group(1) for m in _USER.finditer(text)}


def plain_text(text: str, names: Mapping[str, str]) -> str:
    """``text`` as a person reads it in Slack; ``names`` maps user ids to display names."""
    text = _USER.sub(lambda m: "@" + (names.get(m.group(1)) or m.group(2) or m.group(1)), text)
    text = _CHANNEL.sub(lambda m: "#" + (m.group(2) or m.group(1)), text)
    text = _SPECIAL.sub(lambda m: m.group(2) or "@" + m.group(1), text)
    text = _LINK.sub(_link, text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _link(match: re.Match[str]) -> str:
    url, label = match.group(1), match.group(2)
    shown = url.removeprefix("mailto:").removeprefix("tel:")
    if not label or label in (shown, url):
        return shown
    return f"{label} ({shown})"
