"""Pure rules: does a call need a person's approval, and the hash that pins its arguments
(who may decide it is :meth:`bot.policy.who.Policy.decide`)."""

from __future__ import annotations

import hashlib
import json

from bot.tools.base import Approval


def needs_approval(mode: Approval, *, allowed_here: bool) -> bool:
    """``always`` asks every time; ``ask`` unless the tool was allowed in this channel."""
    if mode == "always":
        return True
    if mode == "ask":
        return not allowed_here
    return False


def arguments_hash(arguments: str) -> str:
    """A hash of the exact arguments (canonical JSON when they parse, else the raw text)."""
    try:
        canonical = json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = arguments
    return hashlib.sha256(canonical.encode()).hexdigest()
