"""The session row as both stores keep it: a run's live messages read back, also as an older
version wrote them (bare message ids)."""

from __future__ import annotations

import json

from bot.api.inbound import ThreadKey
from bot.sessions.model import LiveMessage, Session
from bot.storage.rows import session_of, session_row

KEY = ThreadKey("test:c1:t1")


def test_live_messages_round_trip() -> None:
    session = Session(KEY, live_messages=[LiveMessage("M1", "text"), LiveMessage("S1", None, True)])
    row = session_row(session)[1:]
    assert session_of(KEY, row, []).live_messages == session.live_messages


def test_bare_ids_from_an_older_version_are_records_without_their_text() -> None:
    row = list(session_row(Session(KEY))[1:])
    row[11] = json.dumps(["1700000000.000100"])
    assert session_of(KEY, row, []).live_messages == [LiveMessage("1700000000.000100", None)]
