"""The Philly queueing benchmark: trace and job types, the replay loop, both baselines, the engine, metrics."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from jupyter_hetero.engine import Engine
from jupyter_hetero.sim.baselines import FifoScheduler, QuotaFifoScheduler
from jupyter_hetero.sim.replay_metrics import summarize, tenant_ratio
from jupyter_hetero.sim.philly import (
    BLIND_ORDER,
    FLAVORS,
    Scenario,
    TraceJob,
    Window,
    build_cluster,
    default_queues,
    load_speeds,
    load_trace,
    make_jobs,
    request_for,
    run_one,
    tenant_quotas,
)
from jupyter_hetero.sim.queueing_cli import add_queueing_parser
from jupyter_hetero.sim.replay import JobRecord, ReplayResult, SimJob, replay

from ..builders import node, tenant

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TRACE = DATA / "traces" / "philly_jobs.csv"
THROUGHPUTS = DATA / "gavel_throughputs.json"

needs_data = pytest.mark.skipif(not (TRACE.exists() and THROUGHPUTS.exists()), reason="shared Philly data not available")

SCHEDULERS = {"fifo": FifoScheduler, "quota-fifo": QuotaFifoScheduler, "engine": lambda: Engine(eta=False)}


def sim_job(wid: int, *, tenant: str = "a", gpus: int = 1, at: float = 0.0, work: float = 100.0,
            flavors: tuple[str, ...] = ("v100",), speed: dict[str, float] | None = None) -> SimJob:
    return SimJob(wid, tenant, "training", at, work, request_for(gpus), flavors,
                  speed or {"k80": 1.0, "p100": 1.0, "v100": 1.0})


@dataclass
class Case:
    """A tiny trace on one 8-GPU v100 node and what each scheduler makes of it."""

    jobs: list[SimJob]
    quotas: dict[str, int]  # tenant -> nominal v100 GPUs
    scheduler: str
    starts: dict[int, float]  # job -> first start
    ends: dict[int, float] = field(default_factory=dict)
    preemptions: dict[int, int] = field(default_factory=dict)


def run_case(case: Case) -> dict[int, JobRecord]:
    nodes = [node("v1", "v100").gpus(8).build()]
    tenants = {name: tenant(name).cohort("philly").quota("v100", devices=gpus).build() for name, gpus in case.quotas.items()}
    queues = default_queues(training={"can_borrow": True})
    return replay(case.jobs, nodes, queues, tenants, SCHEDULERS[case.scheduler]()).records


BIG_HEAD = [sim_job(0, gpus=4), sim_job(1, gpus=8, at=1), sim_job(2, tenant="b", at=2, work=10)]
THREE_SMALL = [sim_job(i) for i in range(3)]
STRICT = [sim_job(0, gpus=2), sim_job(1, gpus=2, at=1), sim_job(2, at=2)]
# b borrows the whole node; a's small job reclaims its share 100 s later; training's grace is 120 s.
RECLAIM = [sim_job(0, tenant="b", gpus=8, work=1000), sim_job(1, at=100, work=50)]


@pytest.mark.parametrize("case", [
    pytest.param(Case(BIG_HEAD, {"a": 8, "b": 8}, "fifo", starts={0: 0, 1: 100, 2: 200}),
                 id="fifo: a small job waits behind a big head"),
    pytest.param(Case(BIG_HEAD, {"a": 6, "b": 2}, "engine", starts={0: 0, 1: 100, 2: 2}),
                 id="engine: a small job backfills past a big head"),
    pytest.param(Case(THREE_SMALL, {"a": 2, "b": 6}, "quota-fifo", starts={0: 0, 1: 0, 2: 100}),
                 id="quota fifo: the third job waits for the tenant's quota of 2"),
    pytest.param(Case(STRICT, {"a": 3, "b": 5}, "quota-fifo", starts={0: 0, 1: 100, 2: 100}),
                 id="quota fifo: strict, a job that fits the quota waits behind the tenant's head"),
    pytest.param(Case(THREE_SMALL, {"a": 2, "b": 6}, "engine", starts={0: 0, 1: 0, 2: 0}),
                 id="engine: the third job borrows the idle tenant's quota"),
    pytest.param(Case(RECLAIM, {"a": 4, "b": 4}, "engine", starts={0: 0, 1: 220}, ends={1: 270, 0: 270 + 780},
                      preemptions={0: 1, 1: 0}),
                 id="engine: a lender reclaims, the borrower requeues with its remaining work"),
    pytest.param(Case(RECLAIM, {"a": 4, "b": 4}, "fifo", starts={0: 0, 1: 1000}, ends={0: 1000, 1: 1050}),
                 id="fifo: nobody reclaims anything"),
])
def test_schedulers_on_tiny_traces(case):
    records = run_case(case)
    assert {wid: records[wid].first_start for wid in case.starts} == case.starts
    assert {wid: records[wid].end for wid in case.ends} == case.ends
    assert {wid: records[wid].preemptions for wid in case.preemptions} == case.preemptions
    assert all(r.end is not None for r in records.values())


def test_a_requeued_job_runs_exactly_its_remaining_work():
    records = run_case(Case(RECLAIM, {"a": 4, "b": 4}, "engine", starts={}))
    assert records[0].intervals == [("v100", 0, 220), ("v100", 270, 1050)]
    assert records[0].running_s == 1000  # 220 s before eviction + 780 s after: no work lost, none repeated
    assert records[0].queued_s == 50


def test_quota_fifo_never_holds_more_than_the_nominal_quota():
    jobs = [sim_job(i, tenant="ab"[i % 2], gpus=1 + i % 3, at=i * 7, work=50 + 13 * i) for i in range(30)]
    records = run_case(Case(jobs, {"a": 3, "b": 5}, "quota-fifo", starts={}))
    for name, nominal in (("a", 3), ("b", 5)):
        spans = [(start, stop, r.job.request.total.dev // 1000)
                 for r in records.values() if r.job.tenant == name for _f, start, stop in r.intervals]
        for moment in sorted({start for start, _stop, _n in spans}):
            assert sum(n for start, stop, n in spans if start <= moment < stop) <= nominal


# -- heterogeneity ---------------------------------------------------------------------------

FAST_ON_P100 = {"resnet": {"k80": 1.0, "p100": 4.0, "v100": 2.0}}


@pytest.mark.parametrize(("aware", "flavor", "end"), [
    pytest.param(True, "p100", 100.0, id="aware: fastest flavor first, p100 for this job type"),
    pytest.param(False, "v100", 200.0, id="blind: the fixed order's v100, twice as slow here"),
])
def test_flavor_order_follows_the_job_type(aware, flavor, end):
    [job] = make_jobs([TraceJob(0.0, 400.0, 1, "a")], FAST_ON_P100, seed=0, aware=aware)
    assert job.flavors == (("p100", "v100", "k80") if aware else BLIND_ORDER)
    nodes = build_cluster(1)
    record = replay([job], nodes, default_queues(training={"can_borrow": True}), tenant_quotas([job], nodes),
                    Engine(eta=False)).records[0]
    assert (record.intervals[0][0], record.end) == (flavor, end)


@pytest.mark.parametrize(("gpus", "devices", "replicas"), [
    pytest.param(3, 3, 1, id="3 GPUs: one replica"),
    pytest.param(8, 8, 1, id="8 GPUs: one full node"),
    pytest.param(12, 8, 2, id="12 GPUs: a gang of two 8-GPU replicas"),
    pytest.param(32, 8, 4, id="32 GPUs: a gang of four"),
])
def test_multi_gpu_requests(gpus, devices, replicas):
    request = request_for(gpus)
    assert (request.devices, request.replicas, request.placement) == (devices, replicas, "any")


def test_quotas_follow_gpu_hours_and_cover_each_tenants_largest_job():
    jobs = [sim_job(0, tenant="big", gpus=1, work=300), sim_job(1, tenant="small", gpus=16, work=1)]
    quotas = tenant_quotas(jobs, build_cluster(2))  # 16 GPUs per flavor
    assert {t: {f: q.nominal[f].dev // 1000 for f in FLAVORS} for t, q in quotas.items()} == {
        "big": {"k80": 15, "p100": 15, "v100": 15},  # 300 / 316 of each flavor, rounded
        "small": {"k80": 1, "p100": 1, "v100": 16},  # floored to its 16-GPU job on the first blind flavor
    }


@pytest.mark.parametrize(("text", "start", "days"), [
    pytest.param("2017-11-06+7d", "2017-11-06T00:00:00", 7.0, id="a week"),
    pytest.param("2017-11-06T12:00+1.5d", "2017-11-06T12:00:00", 1.5, id="a time and fractional days"),
    pytest.param("2017-11-06", "2017-11-06T00:00:00", 1.0, id="one day by default"),
])
def test_window_parse(text, start, days):
    window = Window.parse(text)
    assert (window.start.isoformat(), window.days) == (start, days)


def test_window_parse_rejects_nonsense():
    with pytest.raises(ValueError, match="2017-11-06"):
        Window.parse("last tuesday")


# -- metrics ---------------------------------------------------------------------------------

def test_metrics_on_a_hand_checked_case():
    a = sim_job(0, tenant="x", work=100)
    b = sim_job(1, tenant="y", gpus=2, work=50)
    c = sim_job(2, tenant="y", at=20, work=40)
    records = {
        0: JobRecord(a, 10, 110, 0, [("v100", 10, 110)]),  # JCT 110, waited 10
        1: JobRecord(b, 0, 80, 1, [("v100", 0, 30), ("v100", 60, 80)]),  # JCT 80, waited 30 after a preemption
        2: JobRecord(c, 40, 80, 0, [("v100", 40, 80)]),  # JCT 60, waited 20
    }
    summary = summarize(ReplayResult(records, 0, 0.0, 0.0), window_s=100, gpus=4)
    assert summary["avg_jct_s"] == pytest.approx(250 / 3)
    assert summary["queueing_delay_s"]["all"] == pytest.approx({"p50": 20, "p95": 29, "p99": 29.8})
    # device-seconds before t=100: 1 x 90 + 2 x (30 + 20) + 1 x 40 = 230, of 4 x 100
    assert summary["gpu_utilisation"] == pytest.approx(0.575)
    assert summary["tenant_mean_jct_s"] == {"x": 110, "y": 70}
    assert summary["tenant_slowdown"] == pytest.approx({"x": 1.1, "y": 140 / 90})
    assert summary["max_tenant_slowdown"]["tenant"] == "y"
    assert (summary["preemptions"], summary["preempted_jobs"], summary["makespan_s"]) == (1, 1, 110)
    versus = tenant_ratio(summary, {"tenant_mean_jct_s": {"x": 55, "y": 140}})
    assert (versus["tenant"], versus["value"], versus["ratios"]) == ("x", 2.0, {"x": 2.0, "y": 0.5})


# -- the real trace --------------------------------------------------------------------------

@needs_data
def test_trace_window_and_job_types_are_deterministic():
    trace = load_trace(TRACE, Window.parse("2017-11-06+0.25d"))
    assert trace and all(0 <= j.arrival < 6 * 3600 for j in trace)
    assert [j.arrival for j in trace] == sorted(j.arrival for j in trace)
    speeds = load_speeds(THROUGHPUTS)
    assert len(speeds) == 26 and all(s["k80"] == 1.0 for s in speeds.values())
    first, again, other = (make_jobs(trace, speeds, seed=s) for s in (1, 1, 2))
    assert [j.speed for j in first] == [j.speed for j in again]
    assert [j.speed for j in first] != [j.speed for j in other]
    assert all(j.speed[j.flavors[0]] == max(j.speed.values()) for j in first)


@needs_data
@pytest.mark.parametrize("name", ["fifo", "quota-fifo", "engine", "engine-blind"])
def test_every_scheduler_finishes_a_real_slice(name):
    scenario = Scenario(str(TRACE), str(THROUGHPUTS), Window.parse("2017-11-06+0.25d"), nodes_per_flavor=2)
    summary = run_one(scenario, name)
    assert summary["finished"] == summary["jobs"] > 50
    assert 0 < summary["gpu_utilisation"] <= 1
    assert summary["avg_jct_s"] > 0


@needs_data
def test_cli_prints_one_json_object(capsys):
    parser = argparse.ArgumentParser()
    add_queueing_parser(parser.add_subparsers(dest="simulation"))
    args = parser.parse_args(["queueing", "--trace", str(TRACE), "--window", "2017-11-06+0.1d",
                              "--nodes-per-flavor", "2", "--workers", "1", "--json"])
    assert args.run(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["schedulers"]) == ["fifo", "quota-fifo", "engine", "engine-blind"]
    assert out["schedulers"]["quota-fifo"]["tenant_jct_vs_quota_fifo"]["value"] == 1.0
    assert out["heterogeneity_gain"] > 0


@needs_data
def test_cli_says_when_the_window_is_empty(capsys):
    parser = argparse.ArgumentParser()
    add_queueing_parser(parser.add_subparsers(dest="simulation"))
    args = parser.parse_args(["queueing", "--trace", str(TRACE), "--window", "2016-01-01+1d", "--workers", "1"])
    assert args.run(args) == 1
    assert "no jobs" in capsys.readouterr().err


@needs_data
def test_cli_runs_a_subset_of_schedulers(capsys):
    parser = argparse.ArgumentParser()
    add_queueing_parser(parser.add_subparsers(dest="simulation"))
    args = parser.parse_args(["queueing", "--trace", str(TRACE), "--window", "2017-11-06+0.1d", "--nodes-per-flavor", "2",
                              "--workers", "1", "--schedulers", "engine,fifo"])
    assert args.run(args) == 0
    table = capsys.readouterr().out
    assert "engine " in table and "fifo " in table and "quota-fifo" not in table


def test_cli_rejects_an_unknown_scheduler(capsys):
    parser = argparse.ArgumentParser()
    add_queueing_parser(parser.add_subparsers(dest="simulation"))
    with pytest.raises(SystemExit):
        parser.parse_args(["queueing", "--trace", "x.csv", "--schedulers", "engine,slurm"])
    assert "schedulers must be among" in capsys.readouterr().err
