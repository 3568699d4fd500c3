"""Cron expressions read as Vixie cron reads them, due times in a zone across its clock changes, and their words."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from jupyter_hetero.errors import InvalidRequest
from jupyter_hetero.platform.workloads.cron import describe, next_after, parse_cron, zone_of

BERLIN, SHANGHAI, UTC = zone_of("Europe/Berlin"), zone_of("Asia/Shanghai"), zone_of("UTC")


def _at(zone, *parts: int) -> float:
    return dt.datetime(*parts, tzinfo=zone).timestamp()


def _local(zone, wall: float) -> str:
    return dt.datetime.fromtimestamp(wall, zone).strftime("%Y-%m-%d %H:%M %z")


def _runs(expression: str, zone, after: float, count: int) -> list[str]:
    cron, found = parse_cron(expression), []
    for _ in range(count):
        after = next_after(cron, after, zone)
        found.append(_local(zone, after))
    return found


@pytest.mark.parametrize(("expression", "after", "expected"), [
    pytest.param("0 2 * * *", (2026, 12, 7, 1, 0), ["2026-12-07 02:00", "2026-12-08 02:00"], id="every night at two"),
    pytest.param("0 2 * * *", (2026, 12, 7, 2, 0), ["2026-12-08 02:00", "2026-12-09 02:00"],
                 id="strictly after: a due time equal to the start is the next one"),
    pytest.param("*/20 9-10 * * *", (2026, 12, 7, 9, 30),
                 ["2026-12-07 09:40", "2026-12-07 10:00", "2026-12-07 10:20"], id="steps over a range of hours"),
    pytest.param("5/20 * * * *", (2026, 12, 7, 9, 0), ["2026-12-07 09:05", "2026-12-07 09:25", "2026-12-07 09:45"],
                 id="a value with a step runs from it to the field's end"),
    pytest.param("0 9 * * MON-FRI", (2026, 12, 11, 12, 0), ["2026-12-14 09:00", "2026-12-15 09:00"],
                 id="weekdays by name skip the weekend (11 December 2026 is a Friday)"),
    pytest.param("0 0 * * 7", (2026, 12, 7, 0, 0), ["2026-12-13 00:00", "2026-12-20 00:00"], id="7 is Sunday too"),
    pytest.param("0 0 13 * FRI", (2026, 11, 1, 0, 0), ["2026-11-06 00:00", "2026-11-13 00:00", "2026-11-20 00:00"],
                 id="both day fields restricted: either matches (Vixie)"),
    pytest.param("0 0 */10 * FRI", (2026, 11, 1, 0, 0), ["2026-12-11 00:00", "2027-01-01 00:00"],
                 id="a day field starting with * restricts only with the other: Fridays on days 1, 11, 21, 31"),
    pytest.param("30 4 1 jan,Jul *", (2026, 2, 1, 0, 0), ["2026-07-01 04:30", "2027-01-01 04:30"],
                 id="month names in any case"),
    pytest.param("0 0 29 2 *", (2026, 1, 1, 0, 0), ["2028-02-29 00:00"], id="29 February waits for a leap year"),
    pytest.param("@hourly", (2026, 12, 7, 9, 0), ["2026-12-07 10:00", "2026-12-07 11:00"], id="@hourly"),
    pytest.param("@daily", (2026, 12, 7, 9, 0), ["2026-12-08 00:00"], id="@daily"),
    pytest.param("@weekly", (2026, 12, 7, 9, 0), ["2026-12-13 00:00"], id="@weekly: Sundays"),
    pytest.param("@monthly", (2026, 12, 7, 9, 0), ["2027-01-01 00:00"], id="@monthly"),
    pytest.param("@yearly", (2026, 12, 7, 9, 0), ["2027-01-01 00:00"], id="@yearly"),
])
def test_due_times_in_utc(expression, after, expected):
    found = _runs(expression, UTC, _at(UTC, *after), len(expected))
    assert found == [f"{when} +0000" for when in expected]


def test_shanghai_has_no_clock_change_and_runs_eight_hours_ahead_of_utc():
    found = _runs("0 2 * * *", SHANGHAI, _at(UTC, 2026, 3, 28, 12, 0), 3)
    assert found == ["2026-03-29 02:00 +0800", "2026-03-30 02:00 +0800", "2026-03-31 02:00 +0800"]
    assert next_after(parse_cron("0 2 * * *"), _at(UTC, 2026, 12, 7, 17, 0), SHANGHAI) == _at(UTC, 2026, 12, 7, 18, 0)


@pytest.mark.parametrize(("expression", "after", "expected"), [
    pytest.param("30 2 * * *", (2026, 3, 28, 12, 0), ["2026-03-29 03:00 +0200", "2026-03-30 02:30 +0200"],
                 id="02:30 does not exist on the spring-forward night: it runs at the gap's end, 03:00"),
    pytest.param("*/15 2 * * *", (2026, 3, 28, 12, 0), ["2026-03-29 03:00 +0200", "2026-03-30 02:00 +0200"],
                 id="four times in the gap run once at its end"),
    pytest.param("0 * * * *", (2026, 3, 29, 0, 30), ["2026-03-29 01:00 +0100", "2026-03-29 03:00 +0200",
                                                     "2026-03-29 04:00 +0200"],
                 id="hourly skips the hour that does not exist, once"),
    pytest.param("30 2 * * *", (2026, 10, 24, 12, 0), ["2026-10-25 02:30 +0200", "2026-10-26 02:30 +0100"],
                 id="02:30 happens twice on the fall-back night: it runs once, the first time"),
    pytest.param("0 * * * *", (2026, 10, 25, 0, 30), ["2026-10-25 01:00 +0200", "2026-10-25 02:00 +0200",
                                                      "2026-10-25 03:00 +0100"],
                 id="hourly runs the repeated hour once"),
])
def test_due_times_across_berlins_clock_changes(expression, after, expected):
    assert _runs(expression, BERLIN, _at(BERLIN, *after), len(expected)) == expected


def test_a_start_inside_the_repeated_hours_second_pass_waits_for_the_next_hour():
    second_pass = _at(UTC, 2026, 10, 25, 1, 10)  # 02:10 in Berlin, the second time
    assert _local(BERLIN, second_pass) == "2026-10-25 02:10 +0100"
    # 02:30 ran in the first pass (a repeated time runs once): the next is 03:00.
    assert _local(BERLIN, next_after(parse_cron("*/30 * * * *"), second_pass, BERLIN)) == "2026-10-25 03:00 +0100"


@pytest.mark.parametrize(("expression", "said"), [
    pytest.param("", "give five fields", id="empty"),
    pytest.param("* * * *", "give five fields", id="four fields"),
    pytest.param("* * * * * *", "give five fields", id="six fields (seconds are not cron's)"),
    pytest.param("60 * * * *", "the minute 60 is outside 0-59", id="minute out of range"),
    pytest.param("0 24 * * *", "the hour 24 is outside 0-23", id="hour out of range"),
    pytest.param("0 0 0 * *", "the day of month 0 is outside 1-31", id="day of month 0"),
    pytest.param("0 0 * 13 *", "the month 13 is outside 1-12", id="month 13"),
    pytest.param("0 0 * * 8", "the day of week 8 is outside 0-7", id="day of week 8"),
    pytest.param("5-1 * * * *", "runs backwards", id="reversed range"),
    pytest.param("*/0 * * * *", "is not a whole number from 1", id="step 0"),
    pytest.param("*/x * * * *", "is not a whole number from 1", id="step not a number"),
    pytest.param("1,,2 * * * *", "has an empty item", id="empty list item"),
    pytest.param("0 0 * * FUN", "is not a day of week value (SUN, MON", id="unknown day name"),
    pytest.param("٣ * * * *", "is not a minute value", id="a digit that is not ASCII"),
    pytest.param("0 0 30 2 *", "never comes due", id="30 February"),
    pytest.param("@reboot", "is not one of @hourly", id="@reboot"),
    pytest.param("0 " * 101, "longer than 200 characters", id="too long"),
])
def test_a_bad_expression_is_a_400_naming_cron(expression, said):
    with pytest.raises(InvalidRequest) as refused:
        parse_cron(expression)
    assert refused.value.field == "cron" and said in refused.value.message, refused.value.message


@pytest.mark.parametrize("zone", ["Mars/Olympus", "utc", "", "../../etc/passwd", "/etc/localtime", "Asia/Shanghai\x00"])
def test_a_zone_that_is_not_an_iana_name_is_a_400_naming_timezone(zone):
    with pytest.raises(InvalidRequest) as refused:
        zone_of(zone)
    assert refused.value.field == "timezone" and "not an IANA time zone name" in refused.value.message


@pytest.mark.parametrize(("expression", "zone", "said"), [
    pytest.param("0 2 * * *", "Asia/Shanghai", "every day at 02:00 (Asia/Shanghai)", id="daily"),
    pytest.param("* * * * *", "UTC", "every minute (UTC)", id="every minute"),
    pytest.param("*/15 * * * *", "UTC", "every 15 minutes (UTC)", id="every 15 minutes"),
    pytest.param("@hourly", "UTC", "every hour at minute 0 (UTC)", id="hourly"),
    pytest.param("5 */2 * * *", "UTC", "every 2 hours at minute 5 (UTC)", id="every two hours"),
    pytest.param("0 9 * * MON-FRI", "Europe/Berlin", "on Monday to Friday at 09:00 (Europe/Berlin)", id="weekdays"),
    pytest.param("0 8,12,18 * * SAT,SUN", "UTC", "on Sunday, Saturday at 08:00, 12:00, 18:00 (UTC)",
                 id="three times at weekends"),
    pytest.param("0 0 1,15 * *", "UTC", "on day 1, 15 of the month at 00:00 (UTC)", id="days of the month"),
    pytest.param("0 0 13 * FRI", "UTC", "on day 13 of the month or on Friday at 00:00 (UTC)", id="either day"),
    pytest.param("30 2 * 1,7 *", "UTC", "every day in January, July at 02:30 (UTC)", id="some months"),
    pytest.param("0-10 3 * * *", "UTC", "every day at minute 0-10 of hour 3 (UTC)", id="many minutes"),
])
def test_an_expression_in_words(expression, zone, said):
    assert describe(parse_cron(expression), zone) == said


@pytest.mark.parametrize(("expression", "figures"), [
    pytest.param("0 2 * * *", ["02:00"], id="daily"),
    pytest.param("0 9 * * MON-FRI", ["09:00"], id="weekdays"),
    pytest.param("*/15 * * * *", ["15"], id="every 15 minutes"),
    pytest.param("0 0 1,15 * *", ["1", "15", "00:00"], id="days of the month"),
    pytest.param("30 2 * 1,7 *", ["02:30"], id="some months"),
    pytest.param("0 0 13 * FRI", ["13", "00:00"], id="either day"),
])
def test_an_expression_in_chinese_has_no_english_words(expression, figures):
    said = describe(parse_cron(expression), "Asia/Shanghai", "zh")
    assert said.endswith("（Asia/Shanghai）"), said
    assert not re.search("[A-Za-z]", said.replace("Asia/Shanghai", "")), said
    assert all(figure in said for figure in figures), said
