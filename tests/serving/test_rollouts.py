"""Rollouts: a new revision is tried as a canary on its share of real traffic through the endpoint, then
promoted or rolled back automatically by the template's metric targets, with the figures; a manual rollback
to any earlier revision is one call."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

from ..harness import until_async

MODEL = [sys.executable, str(Path(__file__).with_name("model_server.py"))]
# Short windows for the tests; the default catalog's are a minute and 20 requests. The test model answers in a
# few milliseconds, where a 1.5x p95 ratio (the default catalog's) is within a busy 2-core machine's noise: the
# tests judge latency at 5x, which a 500 ms canary misses by far and a healthy one meets. (With about eight
# requests a side, stable's p95 is its slowest answer: a 150 ms canary was promoted once, on a machine busy enough
# that one of stable's answers took over 30 ms.)
CANARY = {"online-inference": {
    "canary": {"replicas": 1, "traffic": 0.5, "window_s": 2, "min_requests": 8},
    "metrics": [{"name": "error_rate", "max": 0.05, "max_increase": 0.02},
                {"name": "request_latency_p95", "max_ratio": 5}]}}

pytestmark = [pytest.mark.usefixtures("team"), pytest.mark.team(vision_a100=4, templates=CANARY)]


async def _serve(api, name: str) -> None:
    await api("services", "POST", {"name": name, "command": MODEL, "replicas": 2, "env": {"MODEL_VERSION": "1"},
                                   "parameters": {"devices": 1}}, as_user="alice")
    await until_async(lambda: _ready(api, name, 2), f"service {name} ready", timeout=60)


async def _ready(api, name: str, count: int, revision: int | None = None):
    service = await api(f"services/{name}", as_user="alice")
    ready = [r for r in service["replica_workloads"] if r["ready"] and revision in (None, r["revision"])]
    return service if len(ready) >= count else None


async def _load_until_decided(api, jp_fetch, name: str, timeout: float = 60) -> tuple[dict, list[dict]]:
    """Requests through the endpoint, as a client would send them, until the canary's verdict is in."""
    answers, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        for _ in range(5):
            response = await jp_fetch("hetero", "endpoints", "vision", name, "predict", method="POST", raise_error=False,
                                      body=json.dumps({"inputs": [1]}), headers=_auth())
            answers.append({"code": response.code, **json.loads(response.body)})
        service = await api(f"services/{name}", as_user="alice")
        if service["rollout"] is None:
            return service, answers
        await asyncio.sleep(0.1)
    raise AssertionError(f"no verdict on the canary of {name} within {timeout} s: {service['rollout']}")


def _auth() -> dict:
    from ..conftest import _token

    return {"Authorization": f"token {_token('alice')}"}


@pytest.mark.parametrize(("change", "missed"), [
    pytest.param({"MODEL_VERSION": "2", "MODEL_ERROR_RATE": "1"}, "error_rate", id="a canary that fails"),
    pytest.param({"MODEL_VERSION": "2", "MODEL_DELAY_S": "0.5"}, "request_latency_p95", id="a canary that is slow"),
])
async def test_a_bad_canary_is_rolled_back_automatically_with_its_figures(api, jp_fetch, wait_for, change, missed):
    await _serve(api, "bad")
    trying = await api("services/bad/rollouts", "POST", {"env": change}, as_user="alice")
    assert (trying["rollout"]["revision"], trying["rollout"]["traffic"]) == (2, 0.5), trying["rollout"]
    service, answers = await _load_until_decided(api, jp_fetch, "bad")
    assert {a.get("version") for a in answers if a["code"] == 200} >= {"1"}
    decided = service["revisions"][-1]
    assert (decided["revision"], decided["outcome"]) == (2, "rolled-back"), decided
    assert decided["canary"]["requests"] >= 8 and any(missed in v for v in decided["violations"]), decided
    assert service["revision"] == 1  # the stable revision stays
    # Each step is an event of the service, the verdict with the figures it rests on.
    events = await api("services/bad/events", as_user="alice")
    assert [e["type"] for e in events] == ["rollout", "canary-rolled-back"], events
    verdict = events[-1]
    assert verdict["data"]["canary"] == decided["canary"] and verdict["data"]["stable"] == decided["stable"]
    assert verdict["data"]["violations"] == decided["violations"] and "rolled back" in verdict["reason"]
    canaries = [r for r in service["replica_workloads"] if r["revision"] == 2]
    for replica in canaries:
        await wait_for(replica["id"], lambda w: w["state"] == "cancelled", as_user="alice")


async def test_a_healthy_canary_is_promoted_and_replaces_the_stable_replicas_then_one_call_rolls_back(
        api, api_error, jp_fetch):
    await _serve(api, "good")
    await api("services/good/rollouts", "POST", {"env": {"MODEL_VERSION": "2"}}, as_user="alice")
    service, _answers = await _load_until_decided(api, jp_fetch, "good")
    decided = service["revisions"][-1]
    assert (decided["outcome"], decided["violations"], service["revision"]) == ("promoted", [], 2), decided
    await until_async(lambda: _only_revision(api, "good", 2, 2), "every replica on revision 2", timeout=60)

    back = await api("services/good/rollback", "POST", {"revision": 1}, as_user="alice")
    assert (back["revision"], back["revisions"][-1]["outcome"], back["revisions"][-1]["to"]) == (3, "rolled-back-to", 1)
    await until_async(lambda: _only_revision(api, "good", 3, 2), "every replica on revision 3", timeout=60)
    response = await jp_fetch("hetero", "endpoints", "vision", "good", "predict", method="POST",
                              body=json.dumps({"inputs": [1]}), headers=_auth())
    assert json.loads(response.body)["version"] == "1"  # revision 1's spec again
    events = await api("services/good/events", as_user="alice")
    assert [e["type"] for e in events] == ["rollout", "canary-promoted", "rolled-back"], events
    assert events[1]["data"]["canary"]["requests"] >= 8 and events[1]["data"]["violations"] == []
    assert "by alice" in events[2]["reason"]
    status, error = await api_error("services/good/events", as_user="bob", tenant="vision")  # not his tenant's
    assert status == 403 and error["message"], error
    status, error = await api_error("services/good/events", as_user="bob")  # his own tenant has no "good"
    assert status == 404 and error["message"], error


async def _only_revision(api, name: str, revision: int, count: int) -> bool:
    service = await api(f"services/{name}", as_user="alice")
    replicas = service["replica_workloads"]
    return len(replicas) == count and all(r["revision"] == revision and r["ready"] for r in replicas)
