"""Two threads write the store at once (the tick's and the event loop's): a read-then-write
transaction holds the write lock from its read, so nothing written in between is lost."""

from __future__ import annotations

import threading
import time

from sqlalchemy import text

from jupyter_hetero.store import Repository
from jupyter_hetero.store.tables import EventRow, WorkloadRow

from ..harness import until

SCHEDULED = ("queued", "preempted", "admitted", "starting", "running")


def test_the_audit_chain_stays_intact_when_two_threads_append_at_once(db_url):
    repository = Repository(db_url, clock=time.time)
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
    assert repository.verify_audit()[1] is None  # each row's hash covers the row before it, none forked
    repository.close()


def _workload(name: str) -> WorkloadRow:
    return WorkloadRow(kind="job", name=name, tenant="vision", user="ada", template="training", queue="training",
                       request={}, spec={}, state="queued", held_cpu_milli=0, held_memory_mib=0, held_device_milli=0,
                       attempts=0)


def _done_or_waiting(repository: Repository, thread: threading.Thread) -> bool:
    """The other writer either committed or waits for the write lock: either way it has had its chance."""
    if not thread.is_alive():
        return True
    with repository.engine.connect() as connection:
        return bool(connection.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'"
        )).scalar())


def test_two_racing_writes_come_through_the_feed_once_each_none_skipped(postgres_url):
    # PostgreSQL hands out ids when rows are inserted, not when they commit; were two writers let
    # through at once, the later could commit first and a reader's cursor would pass the earlier's.
    repository = Repository(postgres_url, clock=time.time)
    cursor, _rows = repository.workload_changes(None, SCHEDULED)
    later = threading.Thread(target=lambda: repository.add_workload(_workload("later"), reason="submitted"))
    with repository.session(write=True) as session:
        earlier = _workload("earlier")
        earlier.created_at = earlier.updated_at = time.time()
        session.add(earlier)
        session.flush()
        session.add(EventRow(workload_id=earlier.id, at=time.time(), type="submitted", data={}))
        session.flush()  # its event id is taken, not yet committed
        later.start()
        until(lambda: _done_or_waiting(repository, later), "the later write to commit or wait")
        cursor, seen = repository.workload_changes(cursor, SCHEDULED)
    later.join()
    _cursor, seen_next = repository.workload_changes(cursor, SCHEDULED)
    assert sorted(row.name for row in seen + seen_next) == ["earlier", "later"]
    repository.close()


def test_a_conditional_write_decides_on_the_row_as_committed_so_a_cancel_is_not_overwritten(postgres_url):
    repository = Repository(postgres_url, clock=time.time)
    job = repository.add_workload(_workload("job"), reason="submitted")
    cancel = threading.Thread(target=lambda: repository.update_workload(
        job.id, event="cancel-requested", reason="cancelled by ada", stopping="cancel"))

    def not_cancelled(row: WorkloadRow) -> bool:
        cancel.start()  # a request arrives while the tick decides
        until(lambda: _done_or_waiting(repository, cancel), "the cancel to commit or wait")
        return row.stopping != "cancel"

    repository.update_workload_if(job.id, not_cancelled, event="time-limit", stopping="time-limit")
    cancel.join()
    assert repository.workload(job.id).stopping == "cancel"
    assert [event.type for event in repository.events(workload_id=job.id)][-1] == "cancel-requested"
    repository.close()


def test_tries_of_one_keyed_submission_at_once_store_it_once(db_url):
    # Write transactions are serial: the later try finds the earlier's row under its key and inserts nothing.
    repository = Repository(db_url, clock=time.time)
    start, stored = threading.Barrier(4), []

    def submit(user: str) -> None:
        start.wait()
        row = _workload("keyed")
        row.user, row.request_key = user, "key-1"
        stored.append((user, repository.add_workload(row, reason="submitted").id))

    threads = [threading.Thread(target=submit, args=(user,)) for user in ("ada", "ada", "ada", "bo")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ada = {workload_id for user, workload_id in stored if user == "ada"}
    bo = {workload_id for user, workload_id in stored if user == "bo"}
    assert len(ada) == 1 and len(bo) == 1 and ada != bo, stored  # the key is each user's own
    assert sorted(row.user for row in repository.workloads()) == ["ada", "bo"]
    repository.close()
