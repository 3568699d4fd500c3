"""Capacity advice, pure: recorded workloads replayed through the engine on more (or fewer) nodes."""

from __future__ import annotations

from jupyter_hetero.engine import Engine, QueuePolicy, Request, Res, TenantQuota
from jupyter_hetero.platform.governance.capacity_advice import CapacityAdvisor, Recorded

from ...builders import node

QUEUES = {"training": QueuePolicy(name="training", priority=10, max_wait_s=2, escalation="notify")}
TENANTS = {"vision": TenantQuota(tenant="vision", nominal={"a100-80g": Res(cpu=10**6, mem=10**7, dev=64_000)})}


def _recorded(id_: int, arrival: float, flavors: tuple[str, ...], waited_s: float) -> Recorded:
    return Recorded(id=id_, tenant="vision", queue="training", template="training", arrival=arrival,
                    request=Request(cpu=1000, mem=1024, devices=2), flavors=flavors, run_s=10, waited_s=waited_s)


def test_more_nodes_are_of_the_first_flavor_asked_that_has_a_node_here():
    # The template asks for H100s first, of which there are none: the advice is more of the A100 node they ran on.
    flavors = ("h100-80g", "a100-80g")
    recorded = [_recorded(1, 0, flavors, 0), _recorded(2, 1, flavors, 9), _recorded(3, 2, flavors, 18)]
    advice = CapacityAdvisor(lambda: Engine(eta=False)).advise(
        recorded, [node("a100-0").gpus(2).build()], QUEUES, TENANTS, {"training": 2}, {"a100-80g": 0.01},
        period_s=3600)
    [training] = advice["queues"]
    assert training["over_max_wait"] and training["replayed_p95_s"] > 2, training
    [more] = advice["add"]
    assert (more["flavor"], more["nodes"], more["devices"], more["like"]) == ("a100-80g", 2, 4, "a100-0"), more
    assert more["replayed_p95_s"] <= 2
