"""Blockers that say the truth (issue 37 item 5): a request beyond all its tenant's quota could ever give says it
can never run as asked, and work whose only nodes were lost or cordoned says so, not "still onboarding"."""

from __future__ import annotations

import re

import pytest

from jupyter_hetero.engine import Engine, render

from ..builders import job, node, snapshot, tenant

NLP = tenant("nlp").quota("a100-80g", devices=1)


def waiting(workload, *, tenants=(NLP,), nodes=(node("a1").gpus(8),), running=()):
    decisions = Engine().cycle(snapshot(nodes=nodes, pending=[workload], running=running, tenants=tenants))
    assert not decisions.admissions, "the workload was admitted"
    return decisions.pending[workload.build().id]


@pytest.mark.parametrize(
    ("workload", "tenants", "said"),
    [
        pytest.param(job(1).tenant("nlp").gpus(2), (NLP,),
                     "it asks 2 devices of flavor a100-80g; tenant nlp has a quota of 1 and could borrow 0 more",
                     id="two devices against a one-device quota, nobody to borrow from"),
        pytest.param(job(1).tenant("nlp").queue("batch").gpus(4),
                     (tenant("nlp").quota("a100-80g", devices=1, borrowing=2), tenant("vision").quota("a100-80g", devices=8)),
                     "it asks 4 devices of flavor a100-80g; tenant nlp has a quota of 1 and could borrow 2 more",
                     id="beyond the quota plus the borrowing limit"),
        pytest.param(job(1).tenant("nlp").queue("batch").gpus(6),
                     (NLP, tenant("vision").quota("a100-80g", devices=8, lending=3)),
                     "it asks 6 devices of flavor a100-80g; tenant nlp has a quota of 1 and could borrow 3 more",
                     id="beyond what the cohort can ever lend"),
        pytest.param(job(1).tenant("nlp").queue("urgent").gpus(2), (NLP, tenant("vision").quota("a100-80g", devices=8)),
                     "it asks 2 devices of flavor a100-80g; tenant nlp has a quota of 1, and queue urgent is never "
                     "preempted, so it borrows none",
                     id="a never-preempted queue never borrows"),
    ],
)
def test_a_request_beyond_the_quota_can_never_run_and_is_inadmissible(workload, tenants, said):
    pending = waiting(workload, tenants=tenants)
    assert [b.kind.removesuffix("-not-preemptible") for b in pending.blockers] == ["exceeds-quota"]
    assert render(pending.blockers[0]) == (
        "request exceeds the tenant's quota: it can never run as asked (" + said + ")")
    # Only a reload of the quota helps, as only the inventory helps work no node could hold: no ETA, out of the cycles.
    assert pending.inadmissible and pending.eta is None


@pytest.mark.parametrize(
    ("workload", "tenants", "running", "kind"),
    [
        pytest.param(job(1).tenant("nlp").gpus(1), (NLP,), [job(9).tenant("nlp").gpus(1).on("a1", 0)], "quota",
                     id="within the quota, which is in use: a matter of time"),
        pytest.param(job(1).tenant("nlp").queue("batch").gpus(2), (NLP, tenant("vision").quota("a100-80g", devices=8)),
                     [job(10 + i).gpus(1).on("a1", i) for i in range(8)], "cohort-borrow",
                     id="beyond the quota but within what it may borrow"),
    ],
)
def test_a_request_the_quota_could_give_later_is_not_said_to_exceed_it(workload, tenants, running, kind):
    pending = waiting(workload, tenants=tenants, running=running)
    assert kind in [b.kind for b in pending.blockers]
    assert "exceeds-quota" not in [b.kind for b in pending.blockers]
    assert not pending.inadmissible


def test_borrowing_that_could_give_the_request_admits_it():
    decisions = Engine().cycle(snapshot(nodes=[node("a1").gpus(8)], pending=[job(1).tenant("nlp").queue("batch").gpus(2)],
                                        tenants=[NLP, tenant("vision").quota("a100-80g", devices=8)]))
    assert [a.workload for a in decisions.admissions] == [1]


def test_a_request_beyond_the_quota_preempts_nobody():
    running = [job(10 + i).tenant("vision").queue("batch").gpus(1).on("a1", i) for i in range(8)]
    decisions = Engine().cycle(snapshot(nodes=[node("a1").gpus(8)], running=running,
                                        pending=[job(1).tenant("nlp").queue("urgent").gpus(2)],
                                        tenants=[NLP, tenant("vision").quota("a100-80g", devices=8)]))
    assert decisions.preemptions == []
    assert [b.kind for b in decisions.pending[1].blockers] == ["exceeds-quota-not-preemptible"]


@pytest.mark.parametrize(
    ("nodes", "kind", "said"),
    [
        pytest.param([node("a1").gpus(2).lost()], "node-lost",
                     "node lost: the nodes of flavor a100-80g left the inventory (1 node(s), such as a1); the work "
                     "waits until one is back or another node joins the flavor",
                     id="the flavor's only node was deleted"),
        pytest.param([node("a1").gpus(2).cordoned()], "cordoned",
                     "cordoned: nodes of flavor a100-80g are cordoned and take no new work (1 node(s), such as a1)",
                     id="the flavor's only node is cordoned"),
        pytest.param([node("a1").gpus(2).pending_onboarding()], "not-onboarded",
                     "onboarding: nodes of flavor a100-80g are still onboarding and not schedulable yet",
                     id="the flavor's only node is onboarding"),
    ],
)
def test_an_unschedulable_node_is_said_as_what_it_is(nodes, kind, said):
    pending = waiting(job(1).gpus(1), tenants=(tenant("vision").quota("a100-80g", devices=8),), nodes=nodes)
    assert [b.kind for b in pending.blockers] == [kind]
    assert render(pending.blockers[0]) == said
    assert "onboarding" not in said or kind == "not-onboarded"


_ENGLISH_WORDS = re.compile(r"\b(?:request|quota|never|node|lost|cordoned|borrow)\b")


@pytest.mark.parametrize(
    ("workload", "nodes"),
    [
        pytest.param(job(1).tenant("nlp").gpus(2), [node("a1").gpus(8)], id="exceeds-quota"),
        pytest.param(job(1).tenant("nlp").gpus(1), [node("a1").gpus(2).lost()], id="node-lost"),
    ],
)
def test_the_new_blockers_read_in_chinese(workload, nodes):
    pending = waiting(workload, nodes=nodes)
    text = render(pending.blockers[0], "zh")
    assert re.search(r"[\u4e00-\u9fff]", text) and not _ENGLISH_WORDS.search(text), text
