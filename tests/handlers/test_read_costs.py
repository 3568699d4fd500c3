"""What a read costs the store: reads share the server's interpreter with the ticks, so each
question to the store counts."""

from __future__ import annotations

from sqlalchemy import event


async def test_the_queues_view_asks_the_store_three_questions_not_one_per_queue(api, jp_serverapp):
    engine = jp_serverapp.web_app.settings["hetero_platform"].repository.engine
    statements = []

    def count(_connection, _cursor, statement, *_args):
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        queues = await api("queues")
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(queues) == 5
    assert len(statements) == 3, statements  # counts, waits, this tenant's use in every queue
