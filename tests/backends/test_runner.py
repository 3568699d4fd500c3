"""The replica runner, as a real process: stops reach the work even when they race its start."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

# Runs the runner with Popen wrapped so that the scheduler's SIGTERM lands after the runner is
# up but before its child exists: the moment a cancel right after admission can hit.
_STOP_DURING_START = """
import os, signal, subprocess, sys
from jupyter_hetero.kernel import runner

real_popen = subprocess.Popen

def popen_after_a_stop(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    return real_popen(*args, **kwargs)

subprocess.Popen = popen_after_a_stop
sys.exit(runner.main(["--exit-file", sys.argv[1], "command", "--", sys.executable, "-c", "import time; time.sleep(60)"]))
"""


def test_a_stop_that_races_the_start_of_the_work_still_stops_it(tmp_path):
    exit_file = tmp_path / "exit.json"
    started = time.monotonic()

    subprocess.run([sys.executable, "-c", _STOP_DURING_START, str(exit_file)], timeout=30, check=False)

    assert time.monotonic() - started < 20, "the work ran on although its stop had arrived"
    assert json.loads(exit_file.read_text())["exit_code"] == -signal.SIGTERM
