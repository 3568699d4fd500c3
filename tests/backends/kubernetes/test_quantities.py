"""Kubernetes quantities read exactly, with the rounding each field needs."""

from __future__ import annotations

from fractions import Fraction

import pytest

from jupyter_hetero.backends.kubernetes.quantities import (
    count,
    cpu_milli,
    memory_mib,
    parse_quantity,
)


@pytest.mark.parametrize(("text", "value"), [
    pytest.param("1", Fraction(1), id="plain integer"),
    pytest.param("1.5", Fraction(3, 2), id="decimal"),
    pytest.param(".5", Fraction(1, 2), id="leading dot"),
    pytest.param("500m", Fraction(1, 2), id="milli"),
    pytest.param("100u", Fraction(1, 10**4), id="micro"),
    pytest.param("5n", Fraction(5, 10**9), id="nano"),
    pytest.param("1k", Fraction(1000), id="kilo"),
    pytest.param("16G", Fraction(16 * 10**9), id="decimal giga"),
    pytest.param("1Ki", Fraction(1024), id="kibi"),
    pytest.param("1.5Gi", Fraction(3 * 2**29), id="fractional gibi"),
    pytest.param("2Ei", Fraction(2 * 2**60), id="exbi"),
    pytest.param("1e3", Fraction(1000), id="exponent"),
    pytest.param("12E-1", Fraction(6, 5), id="negative exponent"),
    pytest.param("+2", Fraction(2), id="explicit sign"),
    pytest.param(8, Fraction(8), id="an int from JSON"),
])
def test_quantities_parse_exactly(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1.2.3", "5 Gi", "1GiB", "64gi", "1e", "Gi", "0x10", "1e999", "nan"])
def test_a_bad_quantity_is_a_value_error_naming_it(text):
    with pytest.raises(ValueError, match=repr(text).replace(".", r"\.")):
        parse_quantity(text)


def test_fields_round_as_the_api_and_the_node_need():
    assert cpu_milli("3920m") == 3920
    assert cpu_milli("0.1m") == 1  # rounded up, as the API server does
    assert cpu_milli("1e3") == 1_000_000
    assert memory_mib("1056300Ki") == 1031  # 1031.54 MiB: never offer the part MiB
    assert memory_mib("1Gi") == 1024 and memory_mib("16G") == 15258
    assert count("8") == 8 and count("8000m") == 8
    with pytest.raises(ValueError, match="'500m' is not a whole number"):
        count("500m")
    with pytest.raises(ValueError, match="'-1Gi' is negative"):
        memory_mib("-1Gi")
    with pytest.raises(ValueError, match="True"):
        cpu_milli(True)
