"""Reading ``when``: relative times, ISO 8601, five-field cron in the configured zone, and every
kind of bad input refused with the accepted forms."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from bot.errors import Refused
from bot.scheduler.when import local_time, next_run, read_when

PARIS = ZoneInfo("Europe/Paris")
UTC = ZoneInfo("UTC")
# Saturday 2026-03-28 12:00 in Paris (CET, UTC+1; summer time starts the next night)
NOW = datetime(2026, 3, 28, 12, 0, tzinfo=PARIS).timestamp()
FORMS = "Accepted forms:"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("in 5 seconds", 5),
        ("in 10 minutes", 600),
        ("in 2 hours", 7200),
        ("In 3  Days", 3 * 86400),
        ("in an hour", 3600),
        ("in 1.5 h", 5400),
        ("in 90 sec", 90),
        ("in 2 weeks", 14 * 86400),
        ("10 min", 600),
    ],
)
def test_relative_times_run_once_that_much_later(text: str, seconds: int) -> None:
    timing = read_when(text, NOW, PARIS)
    assert timing.first_at == NOW + seconds and timing.cron is None


def test_an_iso_time_without_a_zone_is_read_in_the_configured_zone() -> None:
    timing = read_when("2026-03-30T09:00", NOW, PARIS)
    assert datetime.fromtimestamp(timing.first_at, UTC) == datetime(
        2026, 3, 30, 7, 0, tzinfo=UTC
    )  # CEST
    assert local_time(timing.first_at, PARIS) == "Mon 2026-03-30 09:00 CEST"
    assert (
        read_when("2026-03-30T09:00", NOW, UTC).first_at
        == datetime(2026, 3, 30, 9, tzinfo=UTC).timestamp()
    )


def test_an_iso_time_with_a_zone_keeps_it() -> None:
    at = datetime(2026, 3, 29, 8, 0, tzinfo=UTC).timestamp()
    assert read_when("2026-03-29T08:00Z", NOW, PARIS).first_at == at
    assert read_when("2026-03-29 10:00+02:00", NOW, PARIS).first_at == at


def test_cron_weekdays_count_from_sunday_as_in_crontab_in_the_configured_zone() -> None:
    timing = read_when("0 9 * * 1-5", NOW, PARIS)
    assert timing.cron == "0 9 * * 1-5"
    first = datetime.fromtimestamp(timing.first_at, PARIS)
    assert (first.strftime("%A"), first.hour, first.minute) == ("Monday", 9, 0)
    then = next_run("0 9 * * 1-5", PARIS, timing.first_at)
    assert (
        then is not None
        and datetime.fromtimestamp(then, PARIS).strftime("%A %H:%M") == "Tuesday 09:00"
    )
    friday = next_run("0 9 * * 1-5", PARIS, datetime(2026, 4, 3, 10, tzinfo=PARIS).timestamp())
    assert (
        friday is not None
        and datetime.fromtimestamp(friday, PARIS).strftime("%A %d") == "Monday 06"
    )


@pytest.mark.parametrize(
    "text",
    [
        "tomorrow at nine",
        "soon",
        "in five minutes",
        "in 5 fortnights",
        "2026-13-01T09:00",
        "in -5 minutes",
        "every day",
        '"; DROP TABLE schedules; --',
    ],
)
def test_what_cannot_be_read_is_refused_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(Refused) as refused:
        read_when(text, NOW, PARIS)
    message = str(refused.value)
    assert FORMS in message and "in 10 minutes" in message and "0 9 * * 1-5" in message
    assert "Europe/Paris" in message


def test_an_empty_when_is_refused_with_the_accepted_forms() -> None:
    with pytest.raises(Refused, match=FORMS):
        read_when("   ", NOW, PARIS)


def test_a_time_in_the_past_is_refused_saying_how_long_ago() -> None:
    with pytest.raises(Refused) as refused:
        read_when("2026-03-28T10:00", NOW, PARIS)
    assert "in the past (2 h ago" in str(refused.value)
    with pytest.raises(Refused, match="in the past"):
        read_when("2020-01-01T00:00Z", NOW, PARIS)
    with pytest.raises(Refused, match="now, not later"):
        read_when("in 0 seconds", NOW, PARIS)


def test_a_time_more_than_a_year_ahead_is_refused() -> None:
    for text in (
        "in 400 days",
        "in 99999999999999999999 weeks",
        "2099-01-01T00:00",
        "9999-12-31T23:59",
    ):
        with pytest.raises(Refused, match="more than a year ahead"):
            read_when(text, NOW, PARIS)


def test_a_cron_expression_that_never_fires_is_refused() -> None:
    for text in ("0 0 30 2 *", "0 0 31 4 *"):
        with pytest.raises(Refused) as refused:
            read_when(text, NOW, PARIS)
        assert "never fires" in str(refused.value) and FORMS in str(refused.value)


def test_an_invalid_or_six_field_cron_expression_is_refused() -> None:
    with pytest.raises(Refused, match="not a valid cron expression"):
        read_when("61 * * * *", NOW, PARIS)
    with pytest.raises(Refused, match=FORMS):
        read_when("* * * * * *", NOW, PARIS)  # seconds: not a five-field expression


def test_a_recurring_prompt_runs_no_more_often_than_the_minimum_interval() -> None:
    assert read_when("* * * * *", NOW, PARIS).cron == "* * * * *"  # once a minute: allowed
    with pytest.raises(Refused, match="more often than the limit of once every 1 h"):
        read_when("*/5 9 * * *", NOW, PARIS, min_interval_s=3600)
    with pytest.raises(Refused, match="more often"):
        read_when("0,1 9 * * *", NOW, PARIS, min_interval_s=120)
