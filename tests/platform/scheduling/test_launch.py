"""A launch reads each node of its placement from the inventory once, however many replicas and records use it."""

from __future__ import annotations

from .test_cancel_wins import SLEEP, Platform, platform  # noqa: F401 - the platform fixture


def test_a_launch_looks_each_node_of_its_placement_up_once(platform, tmp_path):
    inventory = platform.scheduler.launcher.inventory
    looked_up: list[str] = []
    launching = []
    real_node, real_launch = inventory.node, platform.scheduler.launcher.launch

    def node(name):
        if launching:
            looked_up.append(name)
        return real_node(name)

    def launch(row, now):
        launching.append(row.id)
        try:
            return real_launch(row, now)
        finally:
            launching.pop()

    inventory.node = node
    platform.scheduler.launcher.launch = launch
    job = platform.add("job", "data-preprocessing", spec={"payload": "command", "command": SLEEP, "env": {},
                                                          "cwd": str(tmp_path)})
    row = platform.tick_until(job, lambda row: row.state == "running")
    events = {event.type: event for event in platform.repository.events(workload_id=job)}
    assert events["started"].data["nodes"][row.node].get("flavor") == row.flavor  # the record still names the node
    assert looked_up == [row.node]
