"""What members of one tenant see of each other's work, and what a path or a notebook parameter may name
(issue 33, item 8): a job's env values are its submitter's alone; ids are ASCII digits; parameter names are names."""

from __future__ import annotations

import json
import urllib.parse

import nbformat
import pytest

from .test_lifecycle import gate  # noqa: F401 - the gate fixture

pytestmark = pytest.mark.usefixtures("team")


async def test_env_values_are_shown_and_copied_to_their_submitter_alone(api, gate):  # noqa: F811
    job = await api("workloads", "POST", gate.job("env", template="data-preprocessing", env={"API_KEY": "s3cret"}),
                    as_user="alice")
    assert job["spec"]["env"] == {"API_KEY": "s3cret"}
    # Carol, vision's tenant-admin, sees that alice's job sets API_KEY, not to what; in one workload or the list.
    assert (await api(f"workloads/{job['id']}", as_user="carol"))["spec"]["env"] == {"API_KEY": None}
    listed = next(w for w in await api("workloads", as_user="carol") if w["id"] == job["id"])
    assert listed["spec"]["env"] == {"API_KEY": None}
    assert (await api(f"workloads/{job['id']}", as_user="alice"))["spec"]["env"] == {"API_KEY": "s3cret"}
    # Her resubmission starts without alice's values; alice's own keeps them.
    theirs = await api(f"workloads/{job['id']}/resubmit", "POST", as_user="carol")
    mine = await api(f"workloads/{job['id']}/resubmit", "POST", as_user="alice")
    assert (theirs["spec"]["env"], mine["spec"]["env"]) == ({}, {"API_KEY": "s3cret"})
    for workload in (job, theirs, mine):
        await api(f"workloads/{workload['id']}", "DELETE", as_user="alice" if workload is not theirs else "carol")


async def test_a_workload_id_in_a_path_is_ascii_digits_only(api, api_error, gate, jp_fetch):  # noqa: F811
    job = await api("workloads", "POST", gate.job("ids", template="data-preprocessing"), as_user="alice")
    digits = str(job["id"])
    assert (await api(f"workloads/{digits}", as_user="alice"))["id"] == job["id"]
    # What Python's int() would also read as this id: an underscore, a space (%20), Arabic-Indic digits, a sign.
    for other in (f"0_{digits}", f" {digits}", "".join(chr(0x660 + int(d)) for d in digits), f"+{digits}"):
        for route in (f"workloads/{urllib.parse.quote(other)}", f"workloads/{urllib.parse.quote(other)}/events"):
            status, error = await api_error(route, as_user="alice")
            assert status == 404 and "does not exist" in error["message"], (other, status, error)
    await api(f"workloads/{job['id']}", "DELETE", as_user="alice")


@pytest.mark.parametrize("name", ["x; import os", "print(1)\ny", "class", "1x", ""])
async def test_a_notebook_parameter_is_a_python_variable_name(api_error, jp_root_dir, name):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    (jp_root_dir / "report.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    status, error = await api_error("workloads", "POST", {
        "kind": "job", "template": "data-preprocessing",
        "notebook": {"path": "report.ipynb", "parameters": {name: 1}}}, as_user="alice")
    assert (status, error["field"]) == (400, f"notebook.parameters.{name}"), error
    assert "is not a Python variable name" in error["message"]
