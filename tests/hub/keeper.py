"""Starts a command again each time it exits, as systemd's ``Restart=always`` would: the hetero service under a
keeper, so a test can SIGKILL the service and have it back on the same store at once (JupyterHub itself starts a
managed service again only at its next poll of the process, 30 s later).

    python keeper.py PIDFILE -- COMMAND [ARG...]

PIDFILE holds the running command's pid. While ``PIDFILE.hold`` exists a dead command is not started again (a test
keeps the service down past the forwarder's retry window). SIGINT or SIGTERM, from the hub stopping its service, is
passed on to the command (as SIGTERM) and ends the keeper.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    pidfile, command = Path(argv[0]), argv[2:]
    hold = pidfile.with_name(pidfile.name + ".hold")
    child: subprocess.Popen | None = None

    def stop(_signum, _frame) -> None:
        if child is not None and child.poll() is None:
            child.terminate()
            try:
                child.wait(20)
            except subprocess.TimeoutExpired:
                child.kill()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)  # the hub stops a service with SIGINT first
    while True:
        while hold.exists():
            time.sleep(0.05)
        child = subprocess.Popen(command)
        written = pidfile.with_name(pidfile.name + ".new")
        written.write_text(str(child.pid), encoding="utf-8")
        os.replace(written, pidfile)  # whole, never half-written
        child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
