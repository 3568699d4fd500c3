"""Kernels through the hetero provisioner, in a real server, with real ipykernel processes."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
import time

import pytest
import yaml
from tornado.httpclient import HTTPClientError

from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH
from jupyter_hetero.platform.kernels import usage as kernels_usage

from ..conftest import REPO
from ..harness import until_async


@pytest.fixture
def kernelspecs(jp_kernel_dir):
    """Install the shipped hetero kernelspecs where the test server looks; ``tune(name, **config)`` edits one."""
    for spec in (REPO / "kernels").iterdir():
        shutil.copytree(spec, jp_kernel_dir / spec.name)

    def tune(name: str, *, cull_idle_timeout: float | None = None, **config) -> None:
        path = jp_kernel_dir / name / "kernel.json"
        spec = json.loads(path.read_text())
        if cull_idle_timeout is not None:
            spec["metadata"]["cull_idle_timeout"] = cull_idle_timeout
        spec["metadata"]["kernel_provisioner"]["config"].update(config)
        path.write_text(json.dumps(spec))

    return tune


async def run_code(serverapp, kernel_id: str, code: str) -> str:
    """Execute ``code`` in the kernel and return what it printed."""
    client = serverapp.kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        chunks: list[str] = []
        await client.execute_interactive(
            code, timeout=60,
            output_hook=lambda msg: chunks.append(msg["content"].get("text", "")) if msg["msg_type"] == "stream" else None,
        )
        return "".join(chunks)
    finally:
        client.stop_channels()


async def start_kernel(jp_fetch, name: str) -> str:
    response = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": name}))
    return json.loads(response.body)["id"]


async def kernel_workloads(api):
    return {w["spec"]["kernel_id"]: w for w in await api("workloads", kind="kernel", limit=100)}


async def test_a_gpu_kernel_sees_exactly_its_device_and_gives_it_back(kernelspecs, api, jp_fetch, jp_serverapp):
    kernel_id = await start_kernel(jp_fetch, "hetero-gpu")
    workload = (await kernel_workloads(api))[kernel_id]
    # No flavor pinned: the first of the interactive template's flavors with a free device.
    assert workload["state"] == "running" and workload["flavor"] == "t4"
    devices = ",".join(str(d["index"]) for d in workload["placement"]["slots"][0]["devices"])
    printed = await run_code(jp_serverapp, kernel_id, "import os; print(os.environ['CUDA_VISIBLE_DEVICES'], "
                                                      "os.environ['HETERO_FLAVOR'], os.environ['JUPYTER_HETERO_URL'] != '')")
    assert printed.split() == [devices, "t4", "True"]
    await jp_fetch("api", "kernels", kernel_id, method="DELETE")
    released = await api(f"workloads/{workload['id']}")
    assert released["state"] == "succeeded" and released["placement"] is None
    assert "released" in [e["type"] for e in await api(f"workloads/{workload['id']}/events")]


async def test_a_start_on_a_full_flavor_fails_with_the_blocker_and_eta_or_waits_for_room(kernelspecs, api, api_error,
                                                                                        jp_fetch):
    kernelspecs("hetero-gpu", parameters={"devices": 1, "flavor": "a100-80g"})  # a spec may still pin a flavor
    first = await start_kernel(jp_fetch, "hetero-gpu")
    await start_kernel(jp_fetch, "hetero-gpu")  # both A100s of the demo node are now held
    status, error = await api_error("kernels", "POST", {"template": "interactive", "wait_timeout": 1,
                                                         "parameters": {"devices": 1, "flavor": "a100-80g"}})
    assert status == 409
    assert "capacity: flavor a100-80g has 0 devices free, needs 1 devices" in error["message"]
    assert "ETA ~60 min (when workload" in error["message"]

    waiting = asyncio.ensure_future(api("kernels", "POST", {"template": "interactive", "wait_timeout": 60,
                                                             "parameters": {"devices": 1, "flavor": "a100-80g"}}))
    await asyncio.sleep(0.5)
    assert not waiting.done()
    await jp_fetch("api", "kernels", first, method="DELETE")
    started = await asyncio.wait_for(waiting, 60)
    assert started["placement"]["flavor"] == "a100-80g"
    assert (await jp_fetch("api", "kernels", started["kernel_id"])).code == 200


async def test_a_template_kernelspec_starts_on_whichever_of_its_flavors_has_room(kernelspecs, api, jp_fetch,
                                                                                jp_serverapp):
    # Fine-tuning's first flavor is a100-80g; both A100s of the demo node are taken.
    held = await api("kernels", "POST", {"template": "interactive", "parameters": {"devices": 2, "flavor": "a100-80g"}})
    assert held["placement"]["flavor"] == "a100-80g"
    kernel_id = await start_kernel(jp_fetch, "hetero-fine-tuning")
    workload = (await kernel_workloads(api))[kernel_id]
    assert (workload["template"], workload["state"], workload["flavor"]) == ("fine-tuning", "running", "ascend-910b")
    printed = await run_code(jp_serverapp, kernel_id, "import os; print(os.environ['HETERO_FLAVOR'])")
    assert printed.strip() == "ascend-910b"


async def test_an_idle_kernel_is_warned_then_culled_and_a_busy_one_is_not(kernelspecs, api, jp_fetch, jp_serverapp):
    kernelspecs("hetero-cpu", cull_idle_timeout=3)
    idle = await start_kernel(jp_fetch, "hetero-cpu")
    busy = await start_kernel(jp_fetch, "hetero-cpu")
    running_code = asyncio.ensure_future(run_code(jp_serverapp, busy, "import time; time.sleep(8); print('done')"))
    deadline = time.monotonic() + 30
    while idle in jp_serverapp.kernel_manager and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert idle not in jp_serverapp.kernel_manager, "the idle kernel was never culled"
    workloads = await kernel_workloads(api)
    events = [e["type"] for e in await api(f"workloads/{workloads[idle]['id']}/events")]
    assert "idle-warning" in events and "culling" in events
    assert workloads[idle]["state"] == "cancelled"
    assert workloads[idle]["reason"].startswith("culled: idle")
    assert busy in jp_serverapp.kernel_manager
    assert "done" in await running_code


@pytest.fixture
def standard_culler_on(request, tmp_path, hetero_config, server_config):
    """jupyter_server's culler at 2 s every second; the interactive template's idle timeout is 10 s, or
    none with ``@pytest.mark.parametrize("standard_culler_on", [None], indirect=True)``."""
    catalog = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    next(t for t in catalog["templates"] if t["name"] == "interactive")["idle_timeout_s"] = getattr(request, "param", 10)
    (tmp_path / "catalog.yaml").write_text(yaml.safe_dump(catalog), encoding="utf-8")
    hetero_config["catalog_file"] = str(tmp_path / "catalog.yaml")
    server_config["MappingKernelManager"] = {"cull_idle_timeout": 2, "cull_interval": 1}


def _without_kernelspec_timeout(kernel_dir, name: str) -> None:
    """Without its own cull_idle_timeout, a kernelspec leaves the timeout to its template (or the server)."""
    spec_file = kernel_dir / name / "kernel.json"
    spec = json.loads(spec_file.read_text())
    del spec["metadata"]["cull_idle_timeout"]
    spec_file.write_text(json.dumps(spec))


async def test_one_culler_a_hetero_kernel_by_its_template_a_plain_one_by_jupyter_servers(
        standard_culler_on, kernelspecs, jp_kernel_dir, api, jp_fetch, jp_serverapp):
    _without_kernelspec_timeout(jp_kernel_dir, "hetero-cpu")  # or jupyter_server's culler would use 2 s for it too
    manager = jp_serverapp.kernel_manager
    plain = await start_kernel(jp_fetch, "python3")  # first: its 2 s end well before the hetero kernel's 10 s
    hetero = await start_kernel(jp_fetch, "hetero-cpu")
    await until_async(lambda: plain not in manager, "jupyter_server's culler to cull the plain kernel")
    assert hetero in manager, "jupyter_server's culler culled a hetero kernel"
    await until_async(lambda: hetero not in manager, "the hetero kernel to be culled")
    workload = (await kernel_workloads(api))[hetero]
    events = [e["type"] for e in await api(f"workloads/{workload['id']}/events")]
    assert events.count("idle-warning") == 1 and events.count("culling") == 1
    assert workload["state"] == "cancelled"
    assert workload["reason"].startswith("culled: idle") and "10 s idle timeout of template interactive" in workload["reason"]


@pytest.mark.parametrize("standard_culler_on", [None], indirect=True)
async def test_a_hetero_kernel_without_a_template_timeout_follows_the_servers(
        standard_culler_on, kernelspecs, jp_kernel_dir, api, jp_fetch, jp_serverapp):
    _without_kernelspec_timeout(jp_kernel_dir, "hetero-cpu")
    hetero = await start_kernel(jp_fetch, "hetero-cpu")
    await until_async(lambda: hetero not in jp_serverapp.kernel_manager, "the hetero kernel to be culled")
    workload = (await kernel_workloads(api))[hetero]
    events = [e["type"] for e in await api(f"workloads/{workload['id']}/events")]
    assert events.count("culling") == 1 and workload["state"] == "cancelled"
    assert workload["reason"].endswith("past the 2 s idle timeout of the server (cull_idle_timeout)")


async def test_measuring_a_kernels_usage_does_not_hold_up_other_requests(kernelspecs, api, monkeypatch):
    started = await api("kernels", "POST", {"template": "interactive"})
    monkeypatch.setattr(kernels_usage, "CPU_SAMPLE_S", 2.0)
    measuring = threading.Event()
    measure = kernels_usage._measure
    monkeypatch.setattr(kernels_usage, "_measure", lambda *args: measuring.set() or measure(*args))
    usage = asyncio.ensure_future(api(f"kernels/{started['kernel_id']}/usage"))
    await until_async(measuring.is_set, "the usage request to start measuring")
    assert (await api("version"))["api"] == "v1"
    assert not usage.done(), "the server answered nothing else while it measured the kernel"
    assert (await usage)["memory_mib"] > 0


async def test_the_parameterised_launch_contract(kernelspecs, api, jp_fetch):
    started = await api("kernels", "POST", {"template": "interactive"})
    assert set(started) >= {"kernel_id", "workload_id"}
    assert (await jp_fetch("api", "kernels", started["kernel_id"])).code == 200
    workload = await api(f"workloads/{started['workload_id']}")
    assert workload["kind"] == "kernel" and workload["state"] == "running" and workload["flavor"] == "cpu-standard"
    usage = await api(f"kernels/{started['kernel_id']}/usage")
    assert usage["memory_mib"] > 0 and usage["workload_id"] == started["workload_id"]
    assert usage["device_utilisation"] is None and usage["device_note"]
    await jp_fetch("api", "kernels", started["kernel_id"], method="DELETE")
    assert (await api(f"workloads/{started['workload_id']}"))["state"] == "succeeded"


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        pytest.param({"template": "training"}, 400, "template", id="a template without kernels"),
        pytest.param({"template": "nope"}, 404, "template", id="unknown template"),
        pytest.param({"template": "interactive", "parameters": {"devices": 9}}, 400, "parameters.devices",
                     id="devices above the bound"),
        pytest.param({"template": "interactive", "wait_timeout": -1}, 400, "wait_timeout", id="negative timeout"),
        # Found by fuzzing: it was a 500, "the kernel could not start: No such kernel named ...".
        pytest.param({"template": "interactive", "kernel_name": "no-such-kernelspec"}, 400, "kernel_name",
                     id="unknown kernelspec"),
    ],
)
async def test_bad_kernel_requests(kernelspecs, api_error, body, status, field):
    got, error = await api_error("kernels", "POST", body)
    assert (got, error.get("field")) == (status, field), error


async def test_a_restart_keeps_the_placement(kernelspecs, api, jp_fetch, jp_serverapp):
    kernel_id = await start_kernel(jp_fetch, "hetero-gpu")
    before = (await kernel_workloads(api))[kernel_id]
    await jp_fetch("api", "kernels", kernel_id, "restart", method="POST", body="{}")
    after = (await kernel_workloads(api))[kernel_id]
    assert (after["id"], after["placement"]) == (before["id"], before["placement"])
    assert after["state"] == "running"
    printed = await run_code(jp_serverapp, kernel_id, "import os; print(os.environ['HETERO_WORKLOAD_ID'])")
    assert printed.strip() == str(before["id"])


async def test_a_start_that_does_not_ask_to_wait_answers_within_seconds_with_its_waiting_workload(
        kernelspecs, api, api_error, jp_fetch):
    # Both A100s of the demo node held: a start that does not ask to wait must not hold its connection for its
    # wait_timeout (the fuzzer read a minute as a hang). It answers 202 within seconds with the waiting workload and
    # its blockers, and the kernel starts once placed.
    held = await api("kernels", "POST", {"template": "interactive", "parameters": {"devices": 2, "flavor": "a100-80g"}})
    started = time.monotonic()
    response = await jp_fetch("hetero", "api", "v1", "kernels", method="POST",
                              body=json.dumps({"parameters": {"devices": 1, "flavor": "a100-80g"}}))
    assert time.monotonic() - started < 15
    waiting = json.loads(response.body)
    assert response.code == 202 and waiting["workload"]["state"] in ("queued", "inadmissible"), waiting
    assert waiting["workload"]["id"] == waiting["workload_id"]
    assert "capacity: flavor a100-80g has 0 devices free" in waiting["workload"]["blockers"][0]["message"], waiting
    await jp_fetch("api", "kernels", held["kernel_id"], method="DELETE")
    placed = await until_async(lambda: _running(api, waiting["workload_id"]), "the waiting kernel to be placed", 60)
    assert placed["spec"]["kernel_id"] == waiting["kernel_id"]
    await until_async(lambda: _exists(jp_fetch, waiting["kernel_id"]), "the kernel to run", 60)

async def _running(api, workload_id: int) -> dict | None:
    workload = await api(f"workloads/{workload_id}")
    return workload if workload["state"] == "running" else None


async def _exists(jp_fetch, kernel_id: str) -> bool:
    try:
        return (await jp_fetch("api", "kernels", kernel_id)).code == 200
    except HTTPClientError:
        return False
