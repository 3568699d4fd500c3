"""Where a job runs and with which Python (issue 37 item 1): ``cwd`` resolves inside the submitter's own root, no
``..``, link or other user's folder out of it; ``python`` is an absolute path, recorded, first on the job's PATH."""

from __future__ import annotations

import sys

import pytest

from .test_lifecycle import final

SHOW = "import os, sys\nprint('cwd', os.getcwd())\nprint('PATH0', os.environ['PATH'].split(':')[0])\n"


@pytest.fixture
def homes(jp_root_dir, hetero_config):
    """Each user's root is users/<name> (as on a hub); alice's has a project, and a link into bob's."""
    users = jp_root_dir / "users"
    for name in ("alice", "bob"):
        (users / name / "project").mkdir(parents=True)
    (users / "alice" / "project" / "show.py").write_text(SHOW, encoding="utf-8")
    (users / "alice" / "into-bob").symlink_to(users / "bob")
    hetero_config["user_root_template"] = f"{users}/{{username}}"
    return users


def job(**fields) -> dict:
    return {"kind": "job", "template": "data-preprocessing", "command": ["python", "show.py"], **fields}


@pytest.mark.usefixtures("team")
@pytest.mark.parametrize("cwd", [
    pytest.param("../bob/project", id="a dot-dot out of the root"),
    pytest.param("into-bob/project", id="a link out of the root"),
    pytest.param("{users}/bob/project", id="another user's folder, absolute"),
    pytest.param("/etc", id="a system folder"),
])
async def test_a_cwd_outside_the_submitters_own_root_is_a_400_naming_cwd(homes, api, api_error, cwd):
    status, error = await api_error("workloads", "POST", job(cwd=cwd.format(users=homes)), as_user="alice")
    assert (status, error["field"]) == (400, "cwd"), error
    assert "outside" in error["message"]
    assert await api("workloads", as_user="alice") == []  # nothing stored


@pytest.mark.usefixtures("team")
@pytest.mark.parametrize("python", ["python3", "bin/python", "/"])
async def test_a_python_that_is_not_an_absolute_interpreter_path_is_a_400_naming_python(homes, api_error, python):
    status, error = await api_error("workloads", "POST", job(python=python), as_user="alice")
    assert (status, error["field"]) == (400, "python"), error


@pytest.mark.usefixtures("team")
async def test_the_job_runs_in_its_cwd_with_the_submitters_python_first_on_its_path(homes, api, wait_for):
    project = homes / "alice" / "project"
    created = await api("workloads", "POST", job(cwd=str(project), python=sys.executable), as_user="alice")
    assert created["spec"]["cwd"] == str(project) and created["spec"]["python"] == sys.executable
    done = await wait_for(created["id"], final, as_user="alice")
    log = await api.text(f"workloads/{created['id']}/logs", as_user="alice")
    assert done["state"] == "succeeded", log
    assert f"cwd {project}\n" in log and f"PATH0 {sys.executable.rsplit('/', 1)[0]}\n" in log
    evidence = await api(f"workloads/{created['id']}/evidence", as_user="alice")
    assert (evidence["request"]["cwd"], evidence["request"]["python"]) == (str(project), sys.executable)
