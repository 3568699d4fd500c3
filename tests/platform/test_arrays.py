"""Slurm's array syntax, read into indices and a limit: what is taken, and what is a 400 naming ``array``."""

from __future__ import annotations

import pytest

from jupyter_hetero.errors import InvalidRequest
from jupyter_hetero.platform.workloads.arrays import MAX_INDEX, parse_array
from jupyter_hetero.platform.workloads.environment import array_environment


@pytest.mark.parametrize(("text", "indices", "limit"), [
    pytest.param("0-9", list(range(10)), None, id="a range, both ends in"),
    pytest.param("0-99:2%10", list(range(0, 100, 2)), 10, id="a step and a limit"),
    pytest.param("1,3,7-9", [1, 3, 7, 8, 9], None, id="a list of indices and ranges"),
    pytest.param("5", [5], None, id="one index"),
    pytest.param("0-3,2-5", [0, 1, 2, 3, 4, 5], None, id="overlapping ranges are their union, as in Slurm"),
    pytest.param(" 7-9%1 ", [7, 8, 9], 1, id="spaces around are no part of it"),
    pytest.param("1-10:4", [1, 5, 9], None, id="a step that does not reach the end stops before it"),
    pytest.param(f"{MAX_INDEX}", [MAX_INDEX], None, id="the largest index"),
])
def test_an_array_is_read_as_slurm_reads_it(text, indices, limit):
    array = parse_array(text, max_tasks=100)
    assert (list(array.indices), array.limit) == (indices, limit)
    assert array.text == text.strip().partition("%")[0]


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("", "array: '' is not an array of indices such as 0-99, 0-99:2, 1,3,7-9 or 0-99%10", id="empty"),
    pytest.param("a-b", "is not an array of indices", id="letters"),
    pytest.param("1-2-3", "is not an array of indices", id="a range of three ends"),
    pytest.param("1 - 3", "is not an array of indices", id="spaces inside"),
    pytest.param("-1-3", "is not an array of indices", id="a negative index"),
    pytest.param("1,,3", "is not an array of indices", id="an empty element"),
    pytest.param("0-9%", "is not an array of indices", id="a percent sign without a limit"),
    pytest.param("0-9%2%3", "is not an array of indices", id="two limits"),
    pytest.param("5:2", "is not an array of indices", id="a step without a range"),
    pytest.param("9-0", "array: '9-0' runs backwards: 9 is above 0", id="reversed"),
    pytest.param("0-9%0", "array: the limit after % must be at least 1, got 0", id="a limit of 0"),
    pytest.param("0-9%-2", "array: the limit after % must be at least 1, got -2", id="a negative limit"),
    pytest.param("0-9:0", "array: the step after : must be at least 1, got 0", id="a step of 0"),
    pytest.param("0-100", "array: 101 tasks is more than the 100 an array may have here", id="too many tasks"),
    pytest.param("0-99,200", "array: 101 tasks is more than the 100", id="too many tasks in a list"),
    pytest.param("0-2000000000", "array: 2000000001 tasks is more than the 100", id="a range counted, not built"),
    pytest.param(f"{MAX_INDEX + 1}", f"array: index {MAX_INDEX + 1} is above the largest", id="an index too large"),
])
def test_a_bad_array_is_a_400_naming_array(text, message):
    with pytest.raises(InvalidRequest) as refused:
        parse_array(text, max_tasks=100)
    assert refused.value.field == "array"
    assert message in refused.value.message


def test_a_name_too_long_for_its_tasks_names_is_a_400_naming_name():
    parse_array("0-99", max_tasks=100, name="n" * 249)  # n...n[99]: 253 characters
    with pytest.raises(InvalidRequest) as refused:
        parse_array("0-99", max_tasks=100, name="n" * 250)
    assert refused.value.field == "name"
    assert refused.value.message == "name: at most 249 characters for this array, whose tasks are named name[index]"


def test_a_task_reads_its_place_in_its_array_from_its_environment():
    task = parse_array("0-9:3%2", max_tasks=100).task(12, 6)
    assert task == {"id": 12, "index": 6, "size": 4, "limit": 2, "indices": "0-9:3"}
    assert array_environment({"array": task}) == {"HETERO_ARRAY_INDEX": "6", "HETERO_ARRAY_ID": "12",
                                                  "HETERO_ARRAY_SIZE": "4"}
    assert array_environment({"command": ["true"]}) == {}
