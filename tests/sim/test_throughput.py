"""The throughput harness on a small cluster: it drives real cycles and reports consistent counts."""

from __future__ import annotations

from jupyter_hetero.sim.throughput import FLEET, build_cluster, build_workloads, run_throughput, tenant_quotas


def test_the_fleet_mixes_cpu_gpu_and_npu_flavors():
    nodes = build_cluster(100)
    assert {n.flavor for n in nodes} == {flavor for flavor, *_ in FLEET}
    assert {n.family for n in nodes} == {"cpu", "nvidia", "ascend", "amd"}
    assert abs(len(nodes) - 100) <= len(FLEET)


def test_tenants_split_every_flavor_equally():
    quotas = tenant_quotas(build_cluster(100))
    a100 = {q.nominal["a100-80g"].dev for q in quotas.values()}
    assert len(a100) == 1 and a100.pop() > 0


def test_a_short_stream_admits_and_accounts_for_every_workload():
    result = run_throughput(60, 600, cycles=4, seed=3)
    assert result["cycles"] == 4
    assert 0 < result["admissions"] <= 600 + result["preemptions"]
    assert result["pending_left"] == 600 - result["admissions"] + result["preemptions"]
    assert result["cycle_p99_ms"] >= result["cycle_p50_ms"] > 0
    assert result["peak_rss_mib"] > 0


def test_workloads_are_reproducible_for_a_seed():
    first, second = build_workloads(50, seed=7), build_workloads(50, seed=7)
    assert [(w.tenant, w.queue, w.request) for w in first] == [(w.tenant, w.queue, w.request) for w in second]
