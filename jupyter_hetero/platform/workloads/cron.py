"""Cron expressions, read as Vixie cron reads them, and their due times in a time zone.

    cron = parse_cron("0 2 * * MON-FRI")
    due = next_after(cron, after=time.time(), zone=zone_of("Asia/Shanghai"))   # a Unix wall time
    describe(cron, zone="Asia/Shanghai", language="zh")                        # '每周一至周五 02:00（Asia/Shanghai）'

Five fields: minute (0-59), hour (0-23), day of month (1-31), month (1-12 or JAN-DEC), day of week (0-7 or
SUN-SAT, 0 and 7 both Sunday). Each is ``*``, a value, a range ``a-b``, any of them with a step ``/n`` (``5/15``
is ``5-59/15``), or a comma-separated list of those. ``@hourly``, ``@daily`` (``@midnight``), ``@weekly``,
``@monthly`` and ``@yearly`` (``@annually``) stand for their usual fields. As in Vixie cron, when both day fields
are restricted (neither starts with ``*``), a day matches when either does.

Due times are local times of the zone. One that does not exist (a spring-forward gap: 02:30 in Berlin on the last
Sunday of March) is due at the gap's end, the next instant that exists (03:00); one that happens twice (the
autumn's repeated hour) is due once, at its first occurrence. Pure: no clock, no I/O but the zone database.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from ...errors import InvalidRequest
from ...i18n import N_, Message, translate

__all__ = ["Cron", "describe", "next_after", "parse_cron", "zone_of"]

_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_MACROS = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@weekly": "0 0 * * 0",
           "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *"}
# The longest an expression may take to come due: 29 February on a given weekday comes back within 28 years;
# what does not come within this many days never comes (30 February).
_HORIZON_DAYS = 366 * 29
MAX_LENGTH = 200


@dataclass(frozen=True)
class _Field:
    name: str  # as the messages name it
    low: int
    high: int
    names: tuple[str, ...] = ()  # value names, the first for ``low``


_FIELDS = (_Field(N_("minute"), 0, 59), _Field(N_("hour"), 0, 23), _Field(N_("day of month"), 1, 31),
           _Field(N_("month"), 1, 12, _MONTHS), _Field(N_("day of week"), 0, 7, _WEEKDAYS))


@dataclass(frozen=True)
class Cron:
    """A parsed expression: the values each field allows; ``any_day``/``any_weekday`` when that field starts
    with ``*`` (Vixie's rule for the two day fields)."""

    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 Sunday ... 6 Saturday
    any_day: bool
    any_weekday: bool

    def day_matches(self, day: dt.date) -> bool:
        if day.month not in self.months:
            return False
        in_month = day.day in self.days
        in_week = day.isoweekday() % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return in_month and in_week
        return in_month or in_week


def _invalid(message: str, **params) -> InvalidRequest:
    return InvalidRequest(Message(message, **params), field="cron")


def parse_cron(text: str) -> Cron:
    """The expression, or a 400 naming ``cron`` that says what is wrong with which field."""
    expression = " ".join((text or "").split())
    if len(expression) > MAX_LENGTH:
        raise _invalid(N_("cron: the expression is longer than {most} characters"), most=MAX_LENGTH)
    expression = _MACROS.get(expression.lower(), expression)
    if expression.startswith("@"):
        raise _invalid(N_("cron: {macro!r} is not one of {macros}"), macro=expression, macros=", ".join(_MACROS))
    parts = expression.split(" ")
    if len(parts) != len(_FIELDS):
        raise _invalid(N_("cron: give five fields (minute hour day-of-month month day-of-week), got {count}: "
                          "{expression!r}"), count=len(parts) if expression else 0, expression=text)
    values = [_values(part, spec) for part, spec in zip(parts, _FIELDS)]
    weekdays = frozenset(day % 7 for day in values[4])
    cron = Cron(expression, tuple(sorted(values[0])), tuple(sorted(values[1])), frozenset(values[2]),
                frozenset(values[3]), weekdays, parts[2].startswith("*"), parts[4].startswith("*"))
    if not any(cron.day_matches(day) for day in _leap_year()):
        raise _invalid(N_("cron: {expression!r} never comes due (no month has that day)"), expression=text)
    return cron


def _leap_year() -> list[dt.date]:
    start = dt.date(2024, 1, 1)  # a leap year: every day of every month happens in it
    return [start + dt.timedelta(days=offset) for offset in range(366)]


def _values(part: str, spec: _Field) -> set[int]:
    found: set[int] = set()
    for item in part.split(","):
        if not item:
            raise _invalid(N_("cron: the {field} field {part!r} has an empty item"), field=_said(spec.name),
                           part=part)
        span, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) < 1:
                raise _invalid(N_("cron: the {field} field's step {step!r} is not a whole number from 1"),
                               field=_said(spec.name), step=step_text)
            step = int(step_text)
        if span == "*":
            low, high = spec.low, spec.high
        elif "-" in span:
            first, _dash, last = span.partition("-")
            low, high = _value(first, spec), _value(last, spec)
            if low > high:
                raise _invalid(N_("cron: the {field} field's range {span!r} runs backwards"), field=_said(spec.name),
                               span=span)
        else:
            low = _value(span, spec)
            high = spec.high if slash else low  # "5/15": from 5 to the end, every 15
        found.update(range(low, high + 1, step))
    return found


def _value(text: str, spec: _Field) -> int:
    upper = text.upper()
    if spec.names and upper in spec.names:
        return spec.low + spec.names.index(upper)
    if not text.isascii() or not text.isdigit():
        known = f" ({', '.join(spec.names)})" if spec.names else ""
        raise _invalid(N_("cron: {value!r} is not a {field} value{known}"), value=text, field=_said(spec.name),
                       known=known)
    value = int(text)
    if not spec.low <= value <= spec.high:
        raise _invalid(N_("cron: the {field} {value} is outside {low}-{high}"), field=_said(spec.name), value=value,
                       low=spec.low, high=spec.high)
    return value


def _said(name: str) -> Message:
    """A field's name, read in the language of the message that says it."""
    return Message(name)


@cache
def _zones() -> frozenset[str]:
    return frozenset(available_timezones())


def zone_of(name: str) -> ZoneInfo:
    """The IANA zone of that name (``Asia/Shanghai``, ``UTC``), or a 400 naming ``timezone``."""
    if not isinstance(name, str) or name not in _zones():
        raise InvalidRequest(Message(N_("timezone: {zone!r} is not an IANA time zone name (like UTC or "
                                        "Asia/Shanghai)"), zone=name), field="timezone")
    return ZoneInfo(name)


def next_after(cron: Cron, after: float, zone: ZoneInfo) -> float:
    """The first due time strictly after the wall time ``after``, as a wall time."""
    day = dt.datetime.fromtimestamp(after, zone).date()
    for _ in range(_HORIZON_DAYS):
        if cron.day_matches(day):
            for hour in cron.hours:
                for minute in cron.minutes:
                    due = _instant(dt.datetime(day.year, day.month, day.day, hour, minute), zone)
                    if due > after:
                        return due
        day += dt.timedelta(days=1)
    raise ValueError(f"{cron.text!r} does not come due within {_HORIZON_DAYS} days")  # parse_cron refuses these


def _instant(local: dt.datetime, zone: ZoneInfo) -> float:
    """The wall time of a local time: its first occurrence when it happens twice, the end of the gap when it
    does not happen at all."""
    first = local.replace(tzinfo=zone, fold=0)
    if first.astimezone(dt.timezone.utc).astimezone(zone).replace(tzinfo=None) == local:
        return first.timestamp()
    # In a gap: fold=0 reads it with the offset before the change (an instant after the gap's end), fold=1 with
    # the offset after (one before the gap's start); the end is the first whole minute between them whose local
    # time comes after ``local``.
    low, high = int(local.replace(tzinfo=zone, fold=1).timestamp()) // 60, int(first.timestamp()) // 60
    while low < high:
        middle = (low + high) // 2
        if dt.datetime.fromtimestamp(middle * 60, zone).replace(tzinfo=None) > local:
            high = middle
        else:
            low = middle + 1
    return float(low * 60)


# -- in words ------------------------------------------------------------------------------------------------

_DAY_NAMES = (N_("Sunday"), N_("Monday"), N_("Tuesday"), N_("Wednesday"), N_("Thursday"), N_("Friday"),
              N_("Saturday"))
_MONTH_NAMES = (N_("January"), N_("February"), N_("March"), N_("April"), N_("May"), N_("June"), N_("July"),
                N_("August"), N_("September"), N_("October"), N_("November"), N_("December"))
# At most this many times of day are listed one by one ("at 08:00, 12:00 and 18:00").
_LISTED_TIMES = 4


def describe(cron: Cron, zone: str, language: str = "en") -> str:
    """The expression in words, in ``language``: ``every day at 02:00 (Asia/Shanghai)``."""
    time_part, frequent = _times(cron, language)
    days = _days(cron, language)
    if days is None and len(cron.months) == 12 and frequent:
        return Message(N_("{time} ({zone})"), time=time_part, zone=zone).text(language)
    months = ("" if len(cron.months) == 12 else
              Message(N_(" in {months}"), months=_names(cron.months, _MONTH_NAMES, 1, language)).text(language))
    days_part = days if days is not None else translate(N_("every day"), language)
    return Message(N_("{days}{months} {time} ({zone})"), days=days_part, months=months, time=time_part,
                   zone=zone).text(language)


def _times(cron: Cron, language: str) -> tuple[str, bool]:
    """The time-of-day part, and whether it is a frequency (every N minutes) rather than times of day."""
    minutes, hours = cron.minutes, cron.hours
    every_hour = len(hours) == 24
    if every_hour and len(minutes) == 60:
        return translate(N_("every minute"), language), True
    if every_hour and (step := _step(minutes, 60)) is not None:
        return Message(N_("every {n} minutes"), n=step).text(language), True
    if every_hour and len(minutes) == 1:
        return Message(N_("every hour at minute {minute}"), minute=minutes[0]).text(language), True
    if len(minutes) == 1 and (step := _step(hours, 24)) is not None:
        return Message(N_("every {n} hours at minute {minute}"), n=step, minute=minutes[0]).text(language), True
    if len(minutes) * len(hours) <= _LISTED_TIMES:
        times = [f"{hour:02d}:{minute:02d}" for hour in hours for minute in minutes]
        return Message(N_("at {times}"), times=_joined(times, language)).text(language), False
    return Message(N_("at minute {minutes} of hour {hours}"), minutes=_numbers(minutes, language),
                   hours=_numbers(hours, language)).text(language), False


def _step(values: tuple[int, ...], size: int) -> int | None:
    """n when ``values`` are 0, n, 2n ... (n > 1, dividing ``size``): ``*/n``."""
    if len(values) < 2 or values[0] != 0:
        return None
    step = values[1]
    return step if size % step == 0 and values == tuple(range(0, size, step)) else None


def _days(cron: Cron, language: str) -> str | None:
    """The days part; None for every day."""
    weekdays = None if len(cron.weekdays) == 7 else Message(
        N_("on {weekdays}"), weekdays=_names(cron.weekdays, _DAY_NAMES, 0, language)).text(language)
    days = None if len(cron.days) == 31 else Message(
        N_("on day {days} of the month"), days=_numbers(tuple(sorted(cron.days)), language)).text(language)
    if cron.any_day and cron.any_weekday or days is None and weekdays is None:
        return None
    if cron.any_day or days is None:
        return weekdays
    if cron.any_weekday or weekdays is None:
        return days
    return Message(N_("{days} or {weekdays}"), days=days, weekdays=weekdays).text(language)


def _spans(values: list[int]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for value in sorted(values):
        if spans and value == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], value)
        else:
            spans.append((value, value))
    return spans


def _numbers(values: tuple[int, ...], language: str) -> str:
    """``1, 15, 20-25``: runs of three or more as ranges."""
    said: list[str] = []
    for low, high in _spans(list(values)):
        said.extend([f"{low}-{high}"] if high - low >= 2 else [str(value) for value in range(low, high + 1)])
    return _joined(said, language)


def _names(values: frozenset[int], names: tuple[str, ...], first: int, language: str) -> str:
    """``Monday to Friday``, ``January, July``: names read in ``language``, runs of three or more as ranges."""
    said = []
    for low, high in _spans([value - first for value in values]):
        if high - low >= 2:
            said.append(Message(N_("{first} to {last}"), first=translate(names[low], language),
                                last=translate(names[high], language)).text(language))
        else:
            said.extend(translate(names[index], language) for index in range(low, high + 1))
    return _joined(said, language)


def _joined(items: list[str], language: str) -> str:
    return translate(N_(", "), language).join(items)
