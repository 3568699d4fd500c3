"""What every vendor module promises discovery: a missing tool is nothing, a hung, failing or garbled one a note."""

from __future__ import annotations

import subprocess
import time

import pytest

from jupyter_hetero.backends.local import vendors
from jupyter_hetero.backends.local.vendors import cambricon, hygon, intel, run_tool

MODULES = [pytest.param(intel, id="intel"), pytest.param(cambricon, id="cambricon"), pytest.param(hygon, id="hygon")]


def never_run(argv: list[str]) -> str:
    raise AssertionError(f"ran {argv} although the tool is not installed")


def installed_at(path: str):
    return lambda tool: path


@pytest.mark.parametrize("module", MODULES)
def test_a_missing_tool_is_nothing_to_report(module):
    assert module.discover(never_run, lambda tool: None) == ([], [])
    assert module.sample([0], never_run, lambda tool: None) == []


@pytest.mark.parametrize("module", MODULES)
def test_a_hung_tool_is_a_note(module):
    def hung(argv: list[str]) -> str:
        raise subprocess.TimeoutExpired(argv, 10.0)

    devices, notes = module.discover(hung, installed_at(f"/usr/bin/{module.TOOL}"))
    assert devices == []
    assert len(notes) == 1 and notes[0].startswith(f"{module.TOOL}: no answer to ") and notes[0].endswith("within 10 s")
    assert module.sample([0], hung, installed_at(f"/usr/bin/{module.TOOL}")) == []


@pytest.mark.parametrize("module", MODULES)
def test_the_wait_for_a_hung_tool_is_really_bounded(module, tmp_path, monkeypatch):
    tool = tmp_path / module.TOOL
    tool.write_text("#!/bin/sh\nexec sleep 30\n", encoding="utf-8")  # exec: no orphan left holding the pipes
    tool.chmod(0o755)
    monkeypatch.setattr(vendors, "TOOL_TIMEOUT_S", 0.3)
    started = time.monotonic()
    devices, notes = module.discover(run_tool, installed_at(str(tool)))
    assert time.monotonic() - started < 5
    assert devices == [] and notes[0].endswith("within 0.3 s")


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize(
    "output",
    ["", "Segmentation fault (core dumped)", '{"card0": [1, 2', '{"device_list": [7], "card0": "busy"}', "\x00\x1b[0m"],
    ids=["empty", "crash text", "cut-off JSON", "JSON of another shape", "binary junk"],
)
def test_garbled_output_is_a_note(module, output):
    devices, notes = module.discover(lambda argv: output, installed_at(f"/usr/bin/{module.TOOL}"))
    assert devices == []
    assert len(notes) == 1 and notes[0].startswith(f"{module.TOOL}: could not read the output of ")
    assert module.sample([0], lambda argv: output, installed_at(f"/usr/bin/{module.TOOL}")) == []


@pytest.mark.parametrize("module", MODULES)
def test_a_tool_that_cannot_be_run_is_a_note(module):
    def denied(argv: list[str]) -> str:
        raise PermissionError(13, "Permission denied", argv[0])

    devices, notes = module.discover(denied, installed_at(f"/usr/bin/{module.TOOL}"))
    assert devices == [] and notes[0].startswith(f"{module.TOOL}: could not run ")
