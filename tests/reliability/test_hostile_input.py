"""Hostile input against a real server: deep and oversized JSON, shell metacharacters and odd unicode in names and
arguments, path traversal in job scripts, files and service names, and a catalog built to explode. Each is
refused with a clear 4xx naming what is wrong, or taken as plain text; never a 5xx, and nothing is stored half-way."""

from __future__ import annotations

import json
import sys

import pytest
import yaml
from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from jupyter_hetero.catalog import CatalogError, parse_catalog

pytestmark = pytest.mark.usefixtures("team")


async def _call(jp_fetch, route: str, method: str = "GET", body: str | None = None, user: str = "alice",
                **params) -> tuple[int, dict]:
    from ..conftest import _token

    try:
        response = await jp_fetch("hetero", "api", "v1", *route.split("/"), method=method, body=body,
                                  params=params or None, allow_nonstandard_methods=True,
                                  headers={"Authorization": f"token {_token(user)}"})
    except HTTPClientError as error:
        return error.code, json.loads(error.response.body or b"{}")
    return response.code, json.loads(response.body or b"{}")


async def test_malformed_deep_and_oversized_bodies_are_refused_naming_the_problem(jp_fetch, api):
    before = len(await api("workloads", as_user="root"))
    deep = "[" * 100_000 + "]" * 100_000  # past any parser's recursion
    cases = {
        "not json": "{kind: job",
        "deep": json.dumps({"kind": "job", "template": "data-preprocessing", "command": ["true"]})[:-1]
        + ', "env": ' + deep + "}",
        "huge": json.dumps({"kind": "job", "template": "data-preprocessing", "command": ["x" * 5_000_000]}),
        "wrong types": json.dumps({"kind": "job", "template": ["data-preprocessing"], "command": "true"}),
        "unknown field": json.dumps({"kind": "job", "template": "data-preprocessing", "command": ["true"],
                                     "sudo": True}),
    }
    for name, body in cases.items():
        status, error = await _call(jp_fetch, "workloads", "POST", body)
        assert 400 <= status < 500, (name, status, error)
        assert error.get("message"), (name, error)
    assert len(await api("workloads", as_user="root")) == before  # nothing stored half-way


async def test_shell_metacharacters_and_odd_unicode_are_plain_text_never_a_shell(jp_fetch, api, wait_for, tmp_path):
    marker = tmp_path / "pwned"
    hostile = [f"; touch {marker}", f"$(touch {marker})", f"`touch {marker}`", f"| touch {marker}", "名字\u202e\u0000?"]
    code = "import sys, json; print(json.dumps(sys.argv[1:]))"
    status, job = await _call(jp_fetch, "workloads", "POST", json.dumps({
        "kind": "job", "template": "data-preprocessing", "name": "a; rm -rf / # 名字 \u202e",
        "command": [sys.executable, "-c", code, *[h.replace("\u0000", "") for h in hostile]]}))
    assert status == 201, job
    done = await wait_for(job["id"], lambda w: w["state"] in ("succeeded", "failed"), as_user="alice")
    assert done["state"] == "succeeded" and done["name"] == "a; rm -rf / # 名字 \u202e"
    log = await api.text(f"workloads/{job['id']}/logs", as_user="alice")
    assert json.loads(log.strip().splitlines()[-1]) == [h.replace("\u0000", "") for h in hostile]  # as given
    assert not marker.exists(), "a shell ran user text"
    status, error = await _call(jp_fetch, "workloads", "POST", json.dumps({
        "kind": "job", "template": "data-preprocessing", "command": ["true", "a\u0000b"]}))
    assert 400 <= status < 500 and error.get("message"), (status, error)  # a NUL cannot reach an exec


async def test_path_traversal_in_scripts_files_and_names_is_refused(jp_fetch, wait_for, api):
    for script in ("../../etc/passwd", "/etc/passwd", "notebooks/../../../etc/passwd"):
        status, error = await _call(jp_fetch, "workloads", "POST", json.dumps({
            "kind": "job", "template": "data-preprocessing", "script": {"path": script, "args": []}}))
        assert 400 <= status < 500 and error.get("message"), (script, status, error)
    status, job = await _call(jp_fetch, "workloads", "POST", json.dumps({
        "kind": "job", "template": "data-preprocessing", "command": [sys.executable, "-c", "print(1)"]}))
    await wait_for(job["id"], lambda w: w["state"] == "succeeded", as_user="alice")
    for path in ("../../../../etc/passwd", "/etc/passwd", "outputs/../../../../../etc/passwd", "outputs/\u0000x"):
        status, error = await _call(jp_fetch, f"workloads/{job['id']}/files", path=path)
        assert status in (400, 403, 404) and error.get("message"), (path, status, error)
    for name in ("../x", "a/b", "A_B", "名字", "x" * 64):
        status, error = await _call(jp_fetch, "services", "POST", json.dumps({"name": name, "command": ["true"]}))
        assert status == 400 and error.get("field") == "name", (name, status, error)


async def test_integers_past_what_the_store_holds_are_refused_naming_the_field(jp_fetch):
    # Found by fuzzing: each was a 500, the database driver's OverflowError for an integer past 64 bits.
    huge = 2**63
    for route, method, body, user, params, field in [
        ("audit", "GET", None, "root", {"after": str(huge)}, "after"),
        ("workloads/1/logs", "GET", None, "alice", {"attempt": str(huge)}, "attempt"),
        ("workloads/1/files", "GET", None, "alice", {"path": "outputs/x", "attempt": str(huge)}, "attempt"),
        ("activity", "POST", {"kernels": [{"workload_id": huge, "execution_state": "idle"}]}, "alice", {},
         "kernels.0.workload_id"),
        ("activity", "POST", {"server": {"workload_id": -huge - 1}}, "alice", {}, "server.workload_id"),
        ("services/any/rollback", "POST", {"revision": huge}, "alice", {}, "revision"),
    ]:
        status, error = await _call(jp_fetch, route, method, body and json.dumps(body), user, **params)
        assert (status, error.get("field")) == (400, field), (route, status, error)
    for route, method in [(f"workloads/{huge}", "GET"), (f"workloads/{huge}", "DELETE"),
                          (f"workloads/{-huge - 1}/events", "GET"), (f"workloads/{huge}/resubmit", "POST"),
                          (f"kernels/placements/{huge}/started", "POST"), (f"servers/{huge}", "DELETE")]:
        status, error = await _call(jp_fetch, route, method, "{}" if method == "POST" else None)
        assert status == 404 and "does not exist" in error.get("message", ""), (route, status, error)


async def _raw(port: int, base_url: str, route: str, method: str = "GET", body: bytes | None = None,
               user: str = "alice") -> tuple[int, dict]:
    """A call whose URL and body go as given (jp_fetch would escape the percent signs, and send text as UTF-8) to
    the test's server, started by asking for jp_fetch."""
    from ..conftest import _token

    response = await AsyncHTTPClient().fetch(
        f"http://127.0.0.1:{port}{base_url}hetero/api/v1/{route}", method=method, body=body,
        headers={"Authorization": f"token {_token(user)}"}, raise_error=False, allow_nonstandard_methods=True)
    return response.code, json.loads(response.body or b"{}")


async def test_query_and_path_values_that_are_not_utf8_are_refused_naming_the_parameter(jp_fetch, jp_http_port,
                                                                                    jp_base_url):
    # Found by hand beside the fuzzing: in a query, a 500 (a UnicodeDecodeError); in a path, tornado's own 400,
    # which names no field.
    for route, field in [("workloads?queue=%FF", "queue"), ("nodes?emulated=%C3%28", "emulated"),
                         ("workloads/1/files?path=outputs/%ED%A0%80", "path"),  # a surrogate, encoded
                         ("workloads/%C3%28", "workload_id"), ("templates/%FF%FE", "name")]:
        status, error = await _raw(jp_http_port, jp_base_url, route)
        assert (status, error.get("field")) == (400, field) and error.get("message"), (route, status, error)


async def test_numbers_that_are_not_finite_and_text_that_is_not_utf8_are_refused_naming_the_field(
        jp_http_port, jp_base_url, api):
    # Found by hand beside the fuzzing: NaN or infinity (1e999, which JSON's parser reads as infinity) in a quantity
    # was a 500; a lone surrogate was taken into a job's environment, which no process can be given.
    before = len(await api("workloads", as_user="root"))
    job = b'{"kind": "job", "template": "data-preprocessing", "command": ["true"], '
    for route, body, user, field in [
        ("workloads", job + b'"parameters": {"cpu": NaN}}', "alice", "parameters.cpu"),
        ("workloads", job + b'"parameters": {"time_limit": 1e999}}', "alice", "parameters.time_limit"),
        ("workloads", job + b'"parameters": {"memory": -Infinity}}', "alice", "parameters.memory"),
        ("workloads", job + b'"env": {"A": "\\ud800"}}', "alice", "env.A"),
        # Found by the sweep (test_sweep.py): bytes that are not UTF-8 in a body refused it whole, naming no field.
        ("workloads", job + b'"env": {"A": "\xff\xfe"}}', "alice", "env.A"),
        ("services", b'{"name": "x", "command": ["\xc3\x28"]}', "alice", "command[0]"),
        ("previews", b'{"template": "training", "parameters": {"devices": NaN}}', "alice", "parameters.devices"),
        ("activity", b'{"kernels": [{"workload_id": 1, "execution_state": "idle", "last_activity": 1e999}]}',
         "alice", "kernels[0].last_activity"),
        ("audit?since=nan", None, "root", "since"),
        ("audit?until=inf", None, "root", "until"),
    ]:
        status, error = await _raw(jp_http_port, jp_base_url, route, "POST" if body else "GET", body, user)
        assert (status, error.get("field")) == (400, field) and error.get("message"), (route, body, status, error)
    assert len(await api("workloads", as_user="root")) == before  # nothing stored


def test_a_catalog_built_to_explode_is_refused_with_its_problem():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(8))
    for text in (bomb, "flavors: !!python/object/apply:os.system ['true']", "flavors: [", "- just\n- a list"):
        with pytest.raises(CatalogError) as refused:
            parse_catalog(text)
        assert refused.value.issues, text[:40]
    assert yaml.safe_load("a: 1") == {"a": 1}  # the loader is the safe one (the object tag above is refused)
