"""One API schema: the checked-in OpenAPI document and TypeScript types are fresh builds from the
models, and real answers of a real server validate against the document."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from jupyter_hetero import __version__
from jupyter_hetero.api.openapi import DOCUMENT_PATH, build_document, render_document
from jupyter_hetero.handlers import default_handlers

from .test_kernels import kernelspecs  # noqa: F401 - the fixture, for the kernel answers

REPO = Path(__file__).resolve().parents[2]
LABEXTENSION = REPO / "labextension"
JOB = {"kind": "job", "template": "data-preprocessing", "queue": "batch", "command": ["python", "-c", "print(42)"]}
BIG = {"kind": "job", "template": "training", "parameters": {"devices": 8}, "command": ["sleep", "30"]}


def answer_schema(document: dict, path: str, method: str, status: int) -> dict:
    """The JSON schema of one documented answer, with the document's components to resolve its references."""
    answer = document["paths"][path][method]["responses"][str(status)]
    if "$ref" in answer:
        answer = document["components"]["responses"][answer["$ref"].rsplit("/", 1)[1]]
    return {**answer["content"]["application/json"]["schema"], "components": document["components"]}


def check(document: dict, path: str, method: str, status: int, answer) -> None:
    jsonschema.Draft202012Validator(answer_schema(document, path, method, status)).validate(answer)


def test_the_checked_in_document_is_a_fresh_build():
    assert DOCUMENT_PATH.read_text(encoding="utf-8") == render_document(), (
        "handlers/openapi.yaml is stale: run python -m jupyter_hetero.api.openapi")


def test_the_document_is_a_valid_openapi_schema_set():
    document = build_document()
    for schema in document["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)


def test_the_checked_in_typescript_types_are_a_fresh_build(tmp_path):
    # The same command `npm run generate:types` runs, with the output sent elsewhere.
    script = json.loads((LABEXTENSION / "package.json").read_text())["scripts"]["generate:types"]
    argv = shlex.split(script)
    argv[argv.index("-o") + 1] = str(tmp_path / "api.gen.ts")
    argv[0] = str(LABEXTENSION / "node_modules" / ".bin" / argv[0])
    subprocess.run(argv, cwd=LABEXTENSION, check=True, capture_output=True, timeout=120)
    assert (tmp_path / "api.gen.ts").read_text() == (LABEXTENSION / "src" / "api.gen.ts").read_text(), (
        "labextension/src/api.gen.ts is stale: run npm run generate:types in labextension")


def test_an_answer_with_an_undocumented_field_fails_validation():
    document = build_document()
    event = {"id": 1, "at": 0.0, "type": "submitted", "reason": None, "data": {}}
    check(document, "/workloads/{workload_id}/events", "get", 200, [event])
    with pytest.raises(jsonschema.ValidationError):
        check(document, "/workloads/{workload_id}/events", "get", 200, [{**event, "surprise": 1}])
    with pytest.raises(jsonschema.ValidationError):
        check(document, "/workloads/{workload_id}/events", "get", 200, [{k: v for k, v in event.items() if k != "at"}])


def test_every_handler_method_is_documented_and_no_other():
    def pattern(path: str) -> str:
        return re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path)

    handlers = {route.split("hetero/api/v1", 1)[1]: handler for route, handler in default_handlers}
    served = {(path, method) for path, handler in handlers.items()
              for method in ("get", "post", "put", "patch", "delete") if method in vars(handler)}
    documented = {(pattern(path), method) for path, operations in build_document()["paths"].items()
                  for method in operations}
    assert served == documented


async def test_the_server_serves_the_checked_in_document(api):
    served = await api("openapi.json")
    checked_in = yaml.safe_load(DOCUMENT_PATH.read_text(encoding="utf-8"))
    assert served == {**checked_in, "info": {**checked_in["info"], "version": __version__}}


async def test_real_answers_validate_against_the_document(api, api_error, wait_for):
    document = await api("openapi.json")
    for path in ("/version", "/scheduler/ticks", "/templates", "/queues", "/tenants/me", "/tenants", "/nodes"):
        check(document, path, "get", 200, await api(path.lstrip("/")))
    check(document, "/templates/{name}", "get", 200, await api("templates/hpc"))

    created = await api("workloads", "POST", JOB)
    check(document, "/workloads", "post", 201, created)
    done = await wait_for(created["id"], lambda w: w["state"] in ("succeeded", "failed"))
    check(document, "/workloads/{workload_id}", "get", 200, done)
    check(document, "/workloads", "get", 200, await api("workloads"))
    check(document, "/workloads/{workload_id}/events", "get", 200, await api(f"workloads/{created['id']}/events"))
    check(document, "/workloads/{workload_id}/explain", "get", 200, await api(f"workloads/{created['id']}/explain"))
    check(document, "/workloads/{workload_id}/resubmit", "post", 201,
          await api(f"workloads/{created['id']}/resubmit", "POST"))

    running = await api("workloads", "POST", BIG)
    waiting = await api("workloads", "POST", BIG)
    blocked = await wait_for(waiting["id"], lambda w: bool(w.get("blockers")))
    check(document, "/workloads/{workload_id}", "get", 200, blocked)
    check(document, "/workloads/{workload_id}/explain", "get", 200, await api(f"workloads/{waiting['id']}/explain"))
    check(document, "/previews", "post", 200, await api("previews", "POST", {"template": "training"}))
    check(document, "/workloads/{workload_id}/preempt", "post", 200,
          await api(f"workloads/{waiting['id']}/preempt", "POST", dry_run="true"))
    await wait_for(running["id"], lambda w: w["state"] == "running")
    check(document, "/workloads/{workload_id}/preempt", "post", 200, await api(f"workloads/{running['id']}/preempt", "POST"))
    check(document, "/workloads/{workload_id}", "delete", 200, await api(f"workloads/{waiting['id']}", "DELETE"))

    for route, method, body, params, expected in [
        ("workloads", "POST", {"template": "training"}, {}, 400),
        ("nodes", "GET", None, {"emulated": "maybe"}, 400),
        ("templates/no-such-thing", "GET", None, {}, 404),
        (f"workloads/{created['id']}/preempt", "POST", None, {"dry_run": "true"}, 409),
    ]:
        status, error = await api_error(route, method, body, **params)
        assert status == expected
        check(document, "/workloads", "post", 400, error)  # every error answer has the one Error shape

    check(document, "/nodes/{name}", "delete", 200, await api("nodes/cpu-0", "DELETE"))


async def test_answers_to_team_members_validate_against_the_document(team, api, api_error):
    document = await api("openapi.json")
    member_version = await api("version", as_user="alice")
    assert "scheduler" not in member_version  # the loop's figures are GET /scheduler/ticks, for platform admins
    check(document, "/version", "get", 200, member_version)
    check(document, "/tenants/me", "get", 200, await api("tenants/me", as_user="alice"))
    check(document, "/tenants", "get", 200, await api("tenants", as_user="carol"))
    status, error = await api_error("tenants", as_user="alice")
    assert status == 403
    check(document, "/tenants", "get", 403, error)


@pytest.mark.usefixtures("kernelspecs")
async def test_kernel_answers_validate_against_the_document(api, jp_fetch):
    document = await api("openapi.json")
    started = await api("kernels", "POST", {"template": "interactive"})
    check(document, "/kernels", "post", 201, started)
    check(document, "/workloads/{workload_id}", "get", 200, await api(f"workloads/{started['workload_id']}"))
    check(document, "/kernels/{kernel_id}/usage", "get", 200, await api(f"kernels/{started['kernel_id']}/usage"))
    await jp_fetch("api", "kernels", started["kernel_id"], method="DELETE")
