"""Slack features the app may not have (a scope not granted, a feature not enabled in the
app's settings): each is tried, and turned off for the process the first time Slack refuses it
for the whole app, said once in the log. What the bot did before goes on unchanged."""

from __future__ import annotations

import logging
from typing import Literal

from adapters.slack.api import FEATURE_REFUSED

log = logging.getLogger(__name__)

Feature = Literal["suggested prompts", "thread titles", "the Home tab"]
NEEDS: dict[Feature, str] = {
    "suggested prompts": "the assistant:write scope and Agents & AI Apps in the app's settings",
    "thread titles": "the assistant:write scope and Agents & AI Apps in the app's settings",
    "the Home tab": "the Home tab enabled under App Home in the app's settings",
}
"""What each feature needs of the Slack app, for the log line that turns it off."""


class Features:
    """The features Slack refused, each said once."""

    def __init__(self) -> None:
        self._off: set[Feature] = set()

    def on(self, feature: Feature) -> bool:
        return feature not in self._off

    def refused(self, feature: Feature, method: str, code: str) -> None:
        """Slack answered ``code`` to ``method``: a code meaning the app cannot use it turns
        ``feature`` off (logged once); any other concerns that call alone."""
        if code not in FEATURE_REFUSED:
            log.info("Slack %s did not apply here (%s)", method, code)
            return
        if feature in self._off:
            return
        self._off.add(feature)
        log.warning(
            "Slack refused %s (%s): %s stay off until a restart; they need %s",
            method,
            code,
            feature,
            NEEDS[feature],
        )
