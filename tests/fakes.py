"""Fakes for tests, configured into a real server through traitlets (never patched in).

    hetero_config["clock_class"] = "tests.fakes.SteppingClock"
    SteppingClock.step(3600)          # the wall clock jumps an hour, as an NTP step or a resume would
"""

from __future__ import annotations

import time

from jupyter_hetero.services.clock import Clock

__all__ = ["SteppingClock"]


class SteppingClock(Clock):
    """The system's clocks, except that a test can step the wall clock; the monotonic clock never steps."""

    offset = 0.0  # on the class: the server builds its own instance from config

    @classmethod
    def step(cls, seconds: float) -> None:
        cls.offset += seconds

    @classmethod
    def reset(cls) -> None:
        cls.offset = 0.0

    def wall(self) -> float:
        return time.time() + type(self).offset
