"""The pure parts of a live reload: what a new catalog may not do to running work, what it says instead of doing,
and the one holder a tick switches (platform/live_catalog.py). The shipped catalog and the demo's nodes."""

from __future__ import annotations

import threading

import pytest
import yaml

from jupyter_hetero.backends.local import load_emulated_nodes
from jupyter_hetero.capability import Held
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, parse_catalog
from jupyter_hetero.engine_inputs import NodeView
from jupyter_hetero.platform.governance.reload import running_conflicts, said_of
from jupyter_hetero.platform.live_catalog import LiveCatalog
from jupyter_hetero.store.tables import WorkloadRow

from ...conftest import DEMO_NODES


def catalog(change=None):
    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    if change is not None:
        change(data)
    return parse_catalog(yaml.safe_dump(data, allow_unicode=True))


def views(shipped) -> list[NodeView]:
    found = []
    for capability in load_emulated_nodes(str(DEMO_NODES)):
        flavor = shipped.flavor_of(capability)
        found.append(NodeView(capability=capability, flavor=flavor.name if flavor else None, state="ready",
                              first_seen=0.0, last_seen=0.0))
    return found


def running_on(view: NodeView, workload_id: int) -> WorkloadRow:
    return WorkloadRow(id=workload_id, flavor=view.flavor, placement={"slots": [{"node": view.capability.name}]})


def narrow_a100(data):
    next(f for f in data["flavors"] if f["name"] == "a100-80g")["selector"]["models"] = ["A800"]


def test_a_node_with_running_work_may_not_move_to_another_flavor_but_an_idle_one_may():
    shipped = catalog()
    nodes = views(shipped)
    a100 = next(view for view in nodes if view.flavor == "a100-80g")
    assert running_conflicts(shipped, catalog(narrow_a100), [], nodes) == []  # nothing runs there: it may move
    [problem] = running_conflicts(shipped, catalog(narrow_a100), [running_on(a100, 7)], nodes)
    assert problem.startswith(f"node {a100.capability.name} would move from flavor a100-80g to ")
    assert problem.endswith("while workloads 7 run on it")
    assert running_conflicts(shipped, shipped, [running_on(a100, 7)], nodes) == []  # the same catalog: no move


@pytest.mark.parametrize(("held", "nominal", "said"), [
    pytest.param(Held(device_milli=4000), 2, "tenant default uses 4 devices of its quota on a100-80g, now 2 devices; "
                 "running work continues, new work waits", id="over a lowered device quota"),
    pytest.param(Held(device_milli=2000), 2, None, id="at the quota: nothing to say"),
    pytest.param(Held(device_milli=1000, cpu_milli=64000), 2, None, id="devices within: its CPU is not counted"),
])
def test_running_use_over_a_quota_is_said_per_tenant_and_flavor(held, nominal, said):
    def quota(data):
        data["tenants"][0]["quotas"]["a100-80g"] = {"nominal": {"devices": nominal}}

    lowered = catalog(quota)
    name = lowered.tenants[0].name
    messages = [m.text("en") for m in said_of(lowered, {(name, "a100-80g"): held})]
    assert messages == ([said.replace("tenant default", f"tenant {name}")] if said else [])


def test_a_removed_tenant_with_running_work_is_said_not_stopped():
    [message] = said_of(catalog(), {("gone", "t4"): Held(device_milli=1000)})
    assert message.text("en") == "tenant gone is no longer in the catalog and uses 1 devices on t4; running work " \
                                 "continues"


def test_a_staged_catalog_becomes_current_only_at_a_switch_and_a_waiter_sees_it():
    first, second = catalog(), catalog(narrow_a100)
    live = LiveCatalog(first)
    version = live.stage(second)
    assert (live.current, live.version, live.staged) == (first, 1, second)  # a tick running now sees the first
    seen = []
    waiter = threading.Thread(target=lambda: seen.append(live.wait_for(version, 5.0)))
    waiter.start()
    assert live.switch() is first and live.current is second and live.version == version == 2
    waiter.join()
    assert seen == [True] and live.switch() is None and live.wait_for(3, 0.01) is False
    assert LiveCatalog.of(live) is live and LiveCatalog.of(first).current is first
