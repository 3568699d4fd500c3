"""Quantities as users write them, normalised: memory in MiB, CPU in milli-cores, time in seconds.

>>> parse_memory_mib("80Gi"), parse_cpu_milli("500m"), parse_duration_s("1h30m"), compare_versions("535.104", "470")
(81920, 500, 5400, 1)
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated, Any

from packaging.version import InvalidVersion, Version
from pydantic import BeforeValidator

__all__ = [
    "CpuMilli",
    "DurationS",
    "MemoryMiB",
    "compare_versions",
    "friendly_quantities",
    "format_amount",
    "format_cpu",
    "format_memory",
    "parse_cpu_milli",
    "parse_duration_s",
    "parse_memory_mib",
    "version_key",
]

_MEMORY_UNITS = {
    "": 1 / (1024 * 1024),
    "k": 1000 / 1024**2,
    "m": 1000**2 / 1024**2,
    "g": 1000**3 / 1024**2,
    "t": 1000**4 / 1024**2,
    "ki": 1 / 1024,
    "mi": 1,
    "gi": 1024,
    "ti": 1024**2,
    "kib": 1 / 1024,
    "mib": 1,
    "gib": 1024,
    "tib": 1024**2,
    "kb": 1000 / 1024**2,
    "mb": 1000**2 / 1024**2,
    "gb": 1000**3 / 1024**2,
    "tb": 1000**4 / 1024**2,
}
_QUANTITY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_memory_mib(value: Any) -> int:
    """MiB from a Kubernetes-style quantity (``"64Gi"``, ``"512Mi"``, ``"16G"``) or a number of MiB."""
    if isinstance(value, bool):
        raise ValueError("memory must be a quantity such as '64Gi' or a number of MiB")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError("memory must not be negative")
        return int(value)
    match = _QUANTITY.match(str(value))
    if not match or match.group(2).lower() not in _MEMORY_UNITS:
        raise ValueError(f"memory {value!r} is not a quantity such as '64Gi', '512Mi' or '16G'")
    number, unit = match.groups()
    return int(round(float(number) * _MEMORY_UNITS[unit.lower()]))


def parse_cpu_milli(value: Any) -> int:
    """Milli-cores from ``"500m"``, ``"8"`` or a number of cores."""
    if isinstance(value, bool):
        raise ValueError("cpu must be a number of cores or a quantity such as '500m'")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError("cpu must not be negative")
        return int(round(value * 1000))
    match = _QUANTITY.match(str(value))
    if not match or match.group(2) not in ("", "m"):
        raise ValueError(f"cpu {value!r} is not a number of cores or a quantity such as '500m'")
    number, unit = match.groups()
    return int(round(float(number) * (1 if unit == "m" else 1000)))



_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s)")
_DURATION_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration_s(value: Any) -> int:
    """Seconds from ``"2h"``, ``"1h30m"``, ``"90s"``, ``"1d"`` or a number of seconds."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or text such as '2h' or '1h30m'")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError("a duration must not be negative")
        return int(value)
    text = str(value).strip().lower()
    if text.isdigit():
        return int(text)
    parts = _DURATION_PART.findall(text)
    if not parts or _DURATION_PART.sub("", text).strip():
        raise ValueError(f"duration {value!r} is not a number of seconds or text such as '2h' or '1h30m'")
    return int(sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts))


def format_amount(value: float) -> str:
    """``2.0`` -> ``"2"``, ``0.25`` -> ``"0.25"``: a quantity to two decimals, without trailing zeros."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def format_cpu(milli: int) -> str:
    """``64000`` -> ``"64 CPU"``, ``500`` -> ``"0.5 CPU"``: cores for people to read."""
    return format_amount(milli / 1000) + " CPU"


def format_memory(mib: int) -> str:
    """``81920`` -> ``"80Gi"``, ``24105`` -> ``"23.5Gi"``: memory for people to read."""
    for unit, size in (("Ti", 1024**2), ("Gi", 1024)):
        if mib >= size:
            return f"{mib / size:.1f}".removesuffix(".0") + unit
    return f"{mib}Mi"


# Huawei builds ("23.0.3.B050", "23.0.rc3.b020"): a build number after the version it builds, not a beta.
_BUILD = re.compile(r"[.\-_ ]?b(\d{3,})(?=$|[.\-_ +])", re.IGNORECASE)
_RELEASE = re.compile(r"\d+(?:\.\d+)*")
_PRE = re.compile(r"(alpha|beta|preview|pre|rc|a|b|c)(\d*)", re.IGNORECASE)
_POST = re.compile(r"(?:post|build)(\d+)", re.IGNORECASE)
_PRE_LABEL = {"alpha": "a", "a": "a", "beta": "b", "b": "b", "pre": "rc", "preview": "rc", "rc": "rc", "c": "rc"}


@lru_cache(maxsize=4096)
def version_key(version: str) -> Version:
    """A comparable key for a driver or runtime version as vendors write it.

    >>> version_key("7.0.RC1") < version_key("7.0.0") < version_key("cuda 7.0.1")
    True

    PEP 440 rules (``packaging``) where they apply: release numbers compare numerically, trailing
    zeros do not matter, pre-releases (``RC1``, ``rc2``, ``alpha``, ``beta``) come before their
    release. Vendor strings are brought to that form first: a product word before the number is
    dropped (``cuda 12.4``, ``cann 8.0``); a Huawei build number (``B050``) is a build after its
    version (``23.0.3.B050`` is above ``23.0.3``, below ``23.0.4``). What ``packaging`` still cannot
    read keeps its release numbers, its first pre-release marker, and a second marker as a
    development build of that pre-release (``6.0.RC1.alpha003`` is below ``6.0.RC1``); any other
    text is ignored, and text without a number counts as version 0.
    """
    start = re.search(r"\d", version)
    if start is None:
        return Version("0")
    text = _BUILD.sub(lambda m: f".post{int(m.group(1))}", version[start.start():].strip())
    try:
        return Version(text)
    except InvalidVersion:
        return _vendor_version(text)


def _vendor_version(text: str) -> Version:
    release = _RELEASE.match(text)
    assert release is not None  # the text starts with a digit
    pre = post = dev = ""
    for token in re.split(r"[.\-_+ ]+", text[release.end():]):
        if (match := _PRE.fullmatch(token)) is not None:
            if not pre:
                pre = f"{_PRE_LABEL[match.group(1).lower()]}{int(match.group(2) or 0)}"
            elif not dev:
                dev = f".dev{int(match.group(2) or 0)}"
        elif (match := _POST.fullmatch(token)) is not None and not post:
            post = f".post{int(match.group(1))}"
    return Version(f"{release.group()}{pre}{post}{dev}")


def compare_versions(left: str, right: str) -> int:
    """-1, 0 or 1 as ``left`` is older, equal or newer than ``right`` (``"8.0.RC2"`` < ``"8.0"`` <= ``"8.0.0"``)."""
    a, b = version_key(left), version_key(right)
    return (a > b) - (a < b)


MemoryMiB = Annotated[int, BeforeValidator(parse_memory_mib)]
def _milli_or_quantity(value: Any) -> Any:
    # A bare number in a `cpu_milli` field is already milli-cores; text such as "500m" or "2" is parsed.
    return parse_cpu_milli(value) if isinstance(value, str) else value


def friendly_quantities(data: Any) -> Any:
    """Model "before" hook: ``cpu: 4`` (cores) and ``memory: 16Gi``, as users write them, fill
    ``cpu_milli`` and ``memory_mib``; the fields' own validators parse and report bad values."""
    if not isinstance(data, dict) or not ({"cpu", "memory"} & data.keys()):
        return data
    data = dict(data)
    for short, field in (("cpu", "cpu_milli"), ("memory", "memory_mib")):
        if short in data:
            if field in data:
                raise ValueError(f"give either {short} or {field}, not both")
            value = data.pop(short)
            # Text is parsed as a quantity by the field; a bare number of cores becomes text too.
            data[field] = str(value) if short == "cpu" and isinstance(value, (int, float)) and not isinstance(value, bool) else value
    return data


CpuMilli = Annotated[int, BeforeValidator(_milli_or_quantity)]
DurationS = Annotated[int, BeforeValidator(parse_duration_s)]
