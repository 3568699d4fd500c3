"""Two threads write the store at once (the tick's and the event loop's): a read-then-write
transaction holds the write lock from its read, so nothing written in between is lost."""

from __future__ import annotations

import threading
import time

from jupyter_hetero.store import Repository


def test_the_audit_chain_stays_intact_when_two_threads_append_at_once(tmp_path):
    repository = Repository(f"sqlite:///{tmp_path / 'hetero.sqlite'}", clock=time.time)
    start = threading.Barrier(2)

    def append(actor: str) -> None:
        start.wait()
        for n in range(40):
            repository.record_audit(actor=actor, action="catalog.reload", target=f"t{n}", outcome="allowed")

    threads = [threading.Thread(target=append, args=(actor,)) for actor in ("loop", "tick")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(repository.audit_log()) == 80
    assert repository.verify_audit() is None  # each row's hash covers the row before it, none forked
    repository.close()
