"""What a read costs the store: reads share the server's interpreter with the ticks, so each
question to the store counts, and the queues view (polled by every open panel) asks none."""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import event


async def test_the_queues_view_reads_the_last_cycles_sums_and_asks_the_store_nothing(api, jp_serverapp):
    await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing", "command": ["true"]})
    deadline = time.monotonic() + 30
    while not (await api("version")).get("scheduler", {}).get("ticks"):
        assert time.monotonic() < deadline, "the scheduler never ticked"
        await asyncio.sleep(0.05)
    engine = jp_serverapp.web_app.settings["hetero_platform"].repository.engine
    statements = []

    def count(_connection, _cursor, statement, *_args):
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        queues = await api("queues")
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(queues) == 5
    assert [s for s in statements if "workloads" in s] == [], statements
    assert all(q["status_at"] > 0 for q in queues)
