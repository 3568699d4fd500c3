"""The whole server on each database the store supports: a job runs, another is cancelled, both through PostgreSQL too."""

from __future__ import annotations

import pytest

from ..postgres import DATABASES, database

SLEEPER = {"kind": "job", "template": "data-preprocessing", "queue": "batch",
           "command": ["python", "-c", "import time; time.sleep(120)"]}


@pytest.fixture(params=DATABASES)
def hetero_config(request, hetero_config, tmp_path):
    with database(request.param, tmp_path) as url:
        hetero_config["db_url"] = url
        yield hetero_config


async def test_a_job_runs_and_another_is_cancelled_on_each_database(api, wait_for, hetero_config):
    version = await api("version")
    assert version["database"] == hetero_config["db_url"].split(":")[0].split("+")[0]
    job = await api("workloads", "POST", {**SLEEPER, "command": ["python", "-c", "print(42)"]})
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"))
    assert done["state"] == "succeeded", done
    assert "42" in await api.text(f"workloads/{job['id']}/logs")

    sleeper = await api("workloads", "POST", SLEEPER)
    await wait_for(sleeper["id"], lambda w: w["state"] == "running")
    await api(f"workloads/{sleeper['id']}", "DELETE")
    cancelled = await wait_for(sleeper["id"], lambda w: w["state"] in ("cancelled", "succeeded", "failed"))
    assert (cancelled["state"], cancelled["placement"]) == ("cancelled", None)
    assert [w["id"] for w in await api("workloads")] == [sleeper["id"], job["id"]]  # newest first
