"""Jobs end to end: real server, real SQLite file, real processes on this machine."""

from __future__ import annotations


JOB = {"kind": "job", "template": "data-preprocessing", "queue": "batch", "command": ["python", "-c", "print(42)"]}


async def test_the_minimal_contract(api, wait_for):
    created = await api("workloads", "POST", JOB)
    assert set(created) >= {"id", "state"}
    assert created["state"] == "queued"
    done = await wait_for(created["id"], lambda w: w["state"] in ("succeeded", "failed"))
    assert done["state"] == "succeeded", done
    assert "42" in (await _logs(api, created["id"]))


async def _logs(api_fixture, workload_id, **params):
    return await api_fixture.text(f"workloads/{workload_id}/logs", **params)


async def test_a_training_job_sees_exactly_its_gpus(api, wait_for):
    body = {
        "kind": "job", "template": "training", "parameters": {"devices": 2},
        "command": ["python", "-c", "import os; print('CUDA=' + os.environ['CUDA_VISIBLE_DEVICES'], "
                    "'NPU=' + os.environ['ASCEND_RT_VISIBLE_DEVICES'], os.environ['HETERO_FLAVOR'])"],
    }
    created = await api("workloads", "POST", body)
    done = await wait_for(created["id"], lambda w: w["state"] in ("succeeded", "failed"))
    assert done["state"] == "succeeded", done
    log = await _logs(api, created["id"])
    assert "CUDA=0,1 NPU= a100-80g" in log
    assert done["attempts"][0]["node"] == "gpu-a100-0"


async def test_a_code_cell_runs_as_a_job(api, wait_for):
    body = {"kind": "job", "template": "data-preprocessing", "code": "total = sum(range(10))\nprint('total', total)"}
    job = await api("workloads", "POST", body)
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"))
    assert done["state"] == "succeeded", done
    assert "total 45" in await api.text(f"workloads/{job['id']}/logs")


async def test_a_parameterised_notebook_runs_and_comes_back_executed(api, wait_for, jp_root_dir):
    import nbformat

    notebook = nbformat.v4.new_notebook()
    defaults = nbformat.v4.new_code_cell("rows = 10")
    defaults.metadata["tags"] = ["parameters"]
    notebook.cells = [defaults, nbformat.v4.new_code_cell("print('rows', rows * 2)")]
    nbformat.write(notebook, jp_root_dir / "report.ipynb")
    body = {"kind": "job", "template": "data-preprocessing", "notebook": {"path": "report.ipynb", "parameters": {"rows": 21}}}
    job = await api("workloads", "POST", body)
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), timeout=90)
    assert done["state"] == "succeeded", await api.text(f"workloads/{job['id']}/logs")
    from pathlib import Path

    executed = nbformat.read(Path(done["attempts"][0]["archive"]) / "report.ipynb", as_version=4)
    assert executed.cells[1].metadata["tags"] == ["injected-parameters"]
    outputs = "".join(o.get("text", "") for cell in executed.cells for o in cell.get("outputs", []))
    assert "rows 42" in outputs


async def test_a_failing_notebook_fails_the_job(api, wait_for, jp_root_dir):
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("raise ValueError('bad data')")]
    nbformat.write(notebook, jp_root_dir / "broken.ipynb")
    job = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing", "queue": "experiment",
                                          "notebook": {"path": "broken.ipynb"}})
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), timeout=90)
    assert done["state"] == "failed"
    assert done["reason"] == "exit code 1"
    assert "bad data" in await api.text(f"workloads/{job['id']}/logs")


async def test_logs_can_be_followed_until_the_job_ends(api, wait_for):
    body = {"kind": "job", "template": "data-preprocessing",
            "code": "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(0.3)"}
    job = await api("workloads", "POST", body)
    await wait_for(job["id"], lambda w: w["state"] in ("running", "succeeded"))
    followed = await api.text(f"workloads/{job['id']}/logs", follow="true")
    assert [line for line in followed.splitlines() if line.startswith("tick")] == ["tick 0", "tick 1", "tick 2"]


async def test_a_preview_shows_capacity_and_whether_it_would_start_per_flavor(api):
    answer = await api("previews", "POST", {"template": "fine-tuning", "parameters": {"devices": 1}})
    flavors = {f["flavor"]: f for f in answer["flavors"]}
    assert answer["starts_now"] is True and answer["flavor_now"] == "a100-80g"
    assert flavors["a100-80g"]["devices_total"] == 2 and flavors["a100-80g"]["starts_now"] is True
    assert flavors["ascend-910b"]["devices_free"] == 8 and flavors["ascend-910b"]["starts_now"] is True
    # Each flavor names the runtime variant it would use: CANN on Ascend, CUDA on NVIDIA.
    assert flavors["ascend-910b"]["image"].startswith("ascendhub.huawei.com/")
    assert flavors["a100-80g"]["image"] == "nvcr.io/nvidia/pytorch:24.10-py3"
    assert flavors["h100-80g"]["starts_now"] is False
    assert flavors["h100-80g"]["blockers"] == ["capacity: no ready node belongs to flavor h100-80g"]
    assert flavors["h100-80g"]["schedulable"] is False  # no node could ever take it there
    assert await api("workloads") == []  # nothing was stored


async def test_a_preview_of_a_full_flavor_gives_the_blocker_and_eta(api, wait_for):
    hold = {"kind": "job", "template": "training", "parameters": {"devices": 2}, "runtime": "1h",
            "code": "import time\ntime.sleep(30)"}
    job = await api("workloads", "POST", hold)
    await wait_for(job["id"], lambda w: w["state"] == "running")
    answer = await api("previews", "POST", {"template": "training", "parameters": {"flavor": "a100-80g"}, "lang": "zh"})
    assert answer["starts_now"] is False
    assert answer["blockers"][0] == "容量：规格 a100-80g 空闲 0 个设备，需要 1 个设备"
    assert 3000 < answer["eta_s"] <= 3600
    assert answer["flavors"][0]["schedulable"] is True  # it only waits for capacity
    await api(f"workloads/{job['id']}", "DELETE")


async def test_archived_files_can_be_fetched_but_not_outside_the_archive(api, api_error, wait_for):
    code = "import os\nopen(os.path.join(os.environ['HETERO_OUTPUT_DIR'], 'answer.txt'), 'w').write('42')"
    job = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing", "code": code})
    await wait_for(job["id"], lambda w: w["state"] == "succeeded")
    assert await api.text(f"workloads/{job['id']}/files", path="outputs/answer.txt") == "42"
    status, error = await api_error(f"workloads/{job['id']}/files", path="../../../etc/passwd")
    assert (status, error["field"]) == (400, "path")
    status, error = await api_error(f"workloads/{job['id']}/files", path="outputs/missing.txt")
    assert status == 404
