"""Kubernetes quantity strings, read exactly: CPU in milli-cores, memory in MiB, devices as counts.

>>> cpu_milli("3920m"), cpu_milli("1e3"), memory_mib("1056300Ki"), memory_mib("16G"), count("8")
(3920, 1000000, 1031, 15258, 8)

The grammar is the API server's (``resource.Quantity``): a signed decimal number, then a binary
suffix (``Ki`` .. ``Ei``), a decimal suffix (``n u m "" k M G T P E``) or a decimal exponent
(``e3``, ``E-2``). ``units.py`` reads what users type (``16GB``, ``64GiB``, floats, rounding to
the nearest MiB); values from the API are read here instead, as fractions, so ``"1000m"`` is one
core and ``"1Gi"`` is 1024 MiB to the last byte, with the rounding each field needs.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

__all__ = ["count", "cpu_milli", "memory_mib", "parse_quantity"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?$"
)
_MIB = 2**20
# Exponents beyond any real resource; refusing them keeps a hostile label from costing a huge power.
_MAX_EXPONENT = 64


def parse_quantity(value: Any) -> Fraction:
    """The exact value of a quantity (``"1.5Gi"`` -> ``Fraction(1610612736)``); ValueError naming it otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"quantity {value!r} is not a number")
    if isinstance(value, int):
        return Fraction(value)
    if not isinstance(value, str):
        raise ValueError(f"quantity {value!r} is not a Kubernetes quantity such as '500m', '16Gi' or '1e3'")
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(f"quantity {value!r} is not a Kubernetes quantity such as '500m', '16Gi' or '1e3'")
    number = Fraction(match.group("number"))
    if (exponent := match.group("exponent")) is not None:
        if abs(int(exponent)) > _MAX_EXPONENT:
            raise ValueError(f"quantity {value!r} has an exponent beyond any resource")
        return number * Fraction(10) ** int(exponent)
    suffix = match.group("suffix") or ""
    return number * (_BINARY.get(suffix) or _DECIMAL[suffix])


def _non_negative(value: Any, what: str) -> Fraction:
    amount = parse_quantity(value)
    if amount < 0:
        raise ValueError(f"{what} {value!r} is negative")
    return amount


def cpu_milli(value: Any) -> int:
    """Milli-cores, rounded up as the API server does (``"0.1m"`` -> 1)."""
    return math.ceil(_non_negative(value, "cpu") * 1000)


def memory_mib(value: Any) -> int:
    """MiB, rounded down: a node never offers a part of a MiB it does not have."""
    return math.floor(_non_negative(value, "memory") / _MIB)


def count(value: Any) -> int:
    """A device count (``"8"``, ``"8000m"``); a fraction of a device is an error naming the value."""
    amount = _non_negative(value, "count")
    if amount.denominator != 1:
        raise ValueError(f"count {value!r} is not a whole number")
    return int(amount)
