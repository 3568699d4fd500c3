from __future__ import annotations

import pytest

from jupyter_hetero.units import compare_versions, format_memory, parse_cpu_milli, parse_duration_s, parse_memory_mib


@pytest.mark.parametrize(
    ("text", "mib"),
    [
        pytest.param("64Gi", 65536, id="binary giga"),
        pytest.param("512Mi", 512, id="binary mega"),
        pytest.param("1.5Ti", 1572864, id="fractional tera"),
        pytest.param("16G", 15259, id="decimal giga"),
        pytest.param(2048, 2048, id="a number is MiB"),
    ],
)
def test_memory_quantities(text, mib):
    assert parse_memory_mib(text) == mib


@pytest.mark.parametrize("bad", ["lots", "12 parsecs", "-3Gi", True, -1])
def test_bad_memory_quantities_are_rejected(bad):
    with pytest.raises(ValueError):
        parse_memory_mib(bad)


@pytest.mark.parametrize(("text", "milli"), [("500m", 500), ("8", 8000), (2, 2000), (0.5, 500), ("1.5", 1500)])
def test_cpu_quantities(text, milli):
    assert parse_cpu_milli(text) == milli


@pytest.mark.parametrize(("text", "seconds"), [("2h", 7200), ("1h30m", 5400), ("90s", 90), ("1d", 86400), (60, 60), ("300", 300)])
def test_durations(text, seconds):
    assert parse_duration_s(text) == seconds


@pytest.mark.parametrize("bad", ["soon", "2 weeks", "1h then", -5])
def test_bad_durations_are_rejected(bad):
    with pytest.raises(ValueError):
        parse_duration_s(bad)


@pytest.mark.parametrize(
    ("left", "right", "result"),
    [
        pytest.param("535.104.05", "535", 1, id="patch above major"),
        pytest.param("470.82", "535", -1, id="older driver"),
        pytest.param("12.4", "12.4.0", 0, id="trailing zero equal"),
        pytest.param("8.0.RC2", "8.0", 1, id="release candidate text ignored"),
        pytest.param("24.1.rc2", "23.0", 1, id="ascend driver"),
        pytest.param("10.2", "9.10", 1, id="numeric not lexical"),
    ],
)
def test_version_comparison(left, right, result):
    assert compare_versions(left, right) == result


def test_format_memory_round_trips_common_sizes():
    assert format_memory(81920) == "80Gi"
    assert format_memory(24105) == "23.5Gi"
    assert format_memory(512) == "512Mi"
    assert parse_memory_mib(format_memory(81920)) == 81920
