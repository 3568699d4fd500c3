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
        pytest.param("24.1.rc2", "23.0", 1, id="ascend driver"),
        pytest.param("10.2", "9.10", 1, id="numeric not lexical"),
        pytest.param("550.54.15", "550.54", 1, id="nvidia three-part driver"),
        pytest.param("cuda 12.4", "12.4", 0, id="product word before the number"),
        pytest.param("cann 8.0", "8.0.RC1", 1, id="cann release above its candidate"),
        pytest.param("rocm 6.1.2", "6.1", 1, id="rocm"),
        pytest.param("23.0.3.B050", "23.0.3", 1, id="huawei build after its version"),
        pytest.param("23.0.3.B050", "23.0.4", -1, id="huawei build before the next version"),
        pytest.param("23.0.rc3.b020", "23.0.rc3", 1, id="huawei build of a candidate"),
        pytest.param("6.0.RC1.alpha003", "6.0.RC1", -1, id="second marker is a build before the candidate"),
        pytest.param("unknown", "1", -1, id="no number counts as 0"),
    ],
)
def test_version_comparison(left, right, result):
    assert compare_versions(left, right) == result
    assert compare_versions(right, left) == -result


@pytest.mark.parametrize(
    ("candidate", "release"),
    [
        pytest.param("7.0.RC1", "7.0.0", id="upper-case RC"),
        pytest.param("8.0.rc2", "8.0.0", id="lower-case rc"),
        pytest.param("8.0.RC2", "8.0", id="cann candidate below the release"),
        pytest.param("24.1.rc2", "24.1.0", id="ascend driver candidate"),
        pytest.param("8.0.RC2.beta1", "8.0.RC2", id="beta build of a candidate"),
    ],
)
def test_pre_releases_order_below_their_release(candidate, release):
    assert compare_versions(candidate, release) == -1
    assert compare_versions(release, candidate) == 1


def test_format_memory_round_trips_common_sizes():
    assert format_memory(81920) == "80Gi"
    assert format_memory(24105) == "23.5Gi"
    assert format_memory(512) == "512Mi"
    assert parse_memory_mib(format_memory(81920)) == 81920
