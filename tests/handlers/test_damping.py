"""Damping through a real server: `HeteroApp.preemption_limit` reaches the engine, and the store's record
of a workload's preemptions protects it from the next one. Jobs wait on gate files the test creates."""

from __future__ import annotations

import pytest

GATE = '''
import os, sys, time
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.05)
'''


@pytest.fixture
def damped(hetero_config, jp_root_dir):
    """One preemption within the hour protects a workload (list it before ``api``)."""
    hetero_config["preemption_limit"] = 1
    hetero_config["preemption_window"] = 3600
    (jp_root_dir / "gate.py").write_text(GATE, encoding="utf-8")
    return lambda name: {"kind": "job", "script": {"path": "gate.py", "args": [str(jp_root_dir / name)]}}


@pytest.mark.team(vision_a100=2)
async def test_a_workload_preempted_limit_times_is_protected_from_the_next_preemptor(team, damped, api, wait_for):
    # One of the demo A100 node's two devices is reserved for inference: the victim runs on the other.
    victim = await api("workloads", "POST", {**damped("victim"), "template": "training", "queue": "batch"},
                       as_user="alice")
    await wait_for(victim["id"], lambda w: w["state"] == "running", as_user="alice")
    answer = await api(f"workloads/{victim['id']}/preempt", "POST", as_user="root")
    assert answer["stopping"] == "preempt"
    # Requeued and, its device free again, running its second attempt.
    again = await wait_for(victim["id"], lambda w: w["state"] == "running" and w["preemptions"] == 1, as_user="alice")
    assert again["attempt_count"] == 2
    urgent = await api("workloads", "POST", {**damped("urgent"), "template": "training", "queue": "urgent"},
                       as_user="alice")
    waiting = await wait_for(urgent["id"], lambda w: any(b["kind"] == "protected" for b in w.get("blockers", [])),
                             as_user="alice")
    protected = next(b for b in waiting["blockers"] if b["kind"] == "protected")
    assert protected["params"]["limit"] == 1 and protected["params"]["window_s"] == 3600
    assert "were each preempted 1 times in the last 3600 s" in protected["message"]
    zh = await api(f"workloads/{urgent['id']}", lang="zh", as_user="alice")
    assert "已各被抢占 1 次" in next(b["message"] for b in zh["blockers"] if b["kind"] == "protected")
    victim_now = await api(f"workloads/{victim['id']}", as_user="alice")
    assert victim_now["state"] == "running" and victim_now["stopping"] is None
    for workload in (urgent, victim):
        await api(f"workloads/{workload['id']}", "DELETE", as_user="alice")
    await wait_for(victim["id"], lambda w: w["state"] == "cancelled", as_user="alice")
