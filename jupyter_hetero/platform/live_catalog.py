"""The one place that holds the catalog a server runs with, and the one a reload staged for the next tick.

    live = LiveCatalog(catalog)
    live.current                  # what every part reads, each time it needs it (never a copy of its own)
    version = live.stage(fresh)   # a reload: checked already, taken up between two ticks
    live.switch()                 # the scheduler, at the start of a tick: the staged catalog becomes current
    live.wait_for(version, 5.0)   # the reload's caller: True once the tick took it up

A catalog switches only at a tick's start, so no tick sees two catalogs; a request may read either side of one.
"""

from __future__ import annotations

import threading

from ..catalog import Catalog

__all__ = ["LiveCatalog", "ReadsLiveCatalog"]


class LiveCatalog:
    """The current catalog, with a version that each switch bumps (parts that derive something from the
    catalog compare versions to know when to derive it again)."""

    def __init__(self, catalog: Catalog):
        self._current = catalog
        self._staged: Catalog | None = None
        self.version = 1
        self._changed = threading.Condition()

    @classmethod
    def of(cls, catalog: Catalog | LiveCatalog) -> LiveCatalog:
        """The holder itself, or a holder of a fixed catalog (a part built on its own, as in a test)."""
        return catalog if isinstance(catalog, LiveCatalog) else cls(catalog)

    @property
    def current(self) -> Catalog:
        return self._current

    @property
    def staged(self) -> Catalog | None:
        """The catalog the next tick takes up, if a reload staged one."""
        return self._staged

    def stage(self, catalog: Catalog) -> int:
        """Take ``catalog`` up at the next tick (a later stage before then replaces it); the version it will have."""
        with self._changed:
            self._staged = catalog
            return self.version + 1

    def switch(self) -> Catalog | None:
        """The staged catalog becomes current (at a tick boundary); the one it replaced, or None if none was staged."""
        with self._changed:
            if self._staged is None:
                return None
            previous, self._current, self._staged = self._current, self._staged, None
            self.version += 1
            self._changed.notify_all()
            return previous

    def replace(self, catalog: Catalog) -> None:
        """Switch to ``catalog`` at once: only where no tick can be running (a part used on its own)."""
        self.stage(catalog)
        self.switch()

    def wait_for(self, version: int, timeout_s: float) -> bool:
        """Block (off the event loop) until ``version`` is current or ``timeout_s`` passed; whether it is."""
        with self._changed:
            return self._changed.wait_for(lambda: self.version >= version, timeout_s)


class ReadsLiveCatalog:
    """A part that reads the catalog as of now through the holder it keeps as ``live_catalog``, never a copy of
    its own: a reload switches it between two ticks."""

    live_catalog: LiveCatalog

    @property
    def catalog(self) -> Catalog:
        return self.live_catalog.current
