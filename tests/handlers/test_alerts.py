"""Alerts through a real server: a queue whose wait passes its max_wait fires an alert, seen in the API (by its
tenant's members and others alike: a queue is the platform's) and posted to a webhook on 127.0.0.1; it resolves
when the wait ends, and both steps are events. A quota alert is its tenant's only."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from jupyter_hetero.api.openapi import build_document

from ..harness import until_async
from .test_api_schema import check

GATE = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)\n"


class Webhook:
    """An HTTP server on 127.0.0.1 that keeps every JSON body POSTed to it."""

    def __init__(self) -> None:
        self.received: list[dict] = []
        received = self.received

        class Hook(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the standard library's name
                received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hetero-alerts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def statuses(self, rule: str) -> list[str]:
        return [body["status"] for body in self.received if body["alert"]["rule"] == rule]


@pytest.fixture
def webhook(hetero_config) -> Iterator[Webhook]:
    hook = Webhook()
    hetero_config.update(alert_webhook=hook.url, alert_interval=0.2)
    yield hook
    hook.server.shutdown()


@pytest.fixture
def short_waits(request, tmp_path, hetero_config, server_config):
    """The team catalog with the batch queue's max wait at 1 s (list it before ``api``)."""
    from ..builders import TOKENS, team_catalog

    hetero_config["catalog_file"] = team_catalog(tmp_path, queues={"batch": {"max_wait_s": 1}})
    hetero_config["owner_is_platform_admin"] = False
    server_config["ServerApp"] = {"identity_provider_class": "jupyter_hetero.auth.TeamIdentityProvider"}
    server_config["TeamIdentityProvider"] = {"user_tokens": TOKENS}


async def test_a_queue_waiting_past_its_max_wait_fires_an_alert_that_resolves_when_the_wait_ends(
        short_waits, webhook, api, wait_for, jp_root_dir):
    (jp_root_dir / "gate.py").write_text(GATE, encoding="utf-8")
    gated = {"kind": "job", "template": "training", "queue": "batch",
             "script": {"path": "gate.py", "args": [str(jp_root_dir / "open")]}}
    first = await api("workloads", "POST", gated, as_user="alice")
    await wait_for(first["id"], lambda w: w["state"] == "running", as_user="alice")
    waiting = await api("workloads", "POST", gated, as_user="alice")  # vision's one A100 is taken: it waits

    async def firing() -> list[dict]:
        return [a for a in await api("alerts", state="firing", as_user="alice") if a["rule"] == "queue-wait"]

    [alert] = await until_async(firing, "the queue-wait alert to fire", timeout=30)
    assert (alert["subject"], alert["severity"], alert["tenant"]) == ("queue/batch", "warning", None)
    assert alert["figures"]["workload"] == waiting["id"] and alert["figures"]["max_wait_s"] == 1
    assert alert["message"].startswith(f"queue batch: workload {waiting['id']} has waited ")
    assert alert["message_zh"] != alert["message"]
    check(build_document(), "/alerts", "get", 200, [alert])
    assert [a["id"] for a in await api("alerts", as_user="bob") if a["rule"] == "queue-wait"] == [alert["id"]]
    await until_async(lambda: webhook.statuses("queue-wait") == ["firing"] or None, "the webhook to hear of it")
    told = next(body for body in webhook.received if body["alert"]["rule"] == "queue-wait")
    assert told["alert"]["id"] == alert["id"] and told["version"] == 1

    (jp_root_dir / "open").touch()  # the first job ends, the second is admitted: nothing waits any more
    await wait_for(waiting["id"], lambda w: w["state"] in ("running", "succeeded"), as_user="alice", timeout=60)

    async def resolved() -> dict | None:
        alerts = await api("alerts", state="resolved", as_user="root")
        return next((a for a in alerts if a["id"] == alert["id"]), None)

    done = await until_async(resolved, "the alert to resolve", timeout=30)
    assert done["resolved_at"] >= done["fired_at"]
    await until_async(lambda: webhook.statuses("queue-wait") == ["firing", "resolved"] or None,
                      "the webhook to hear it resolved")
    done = await resolved()
    assert [d["outcome"] for d in done["deliveries"]] == ["delivered", "delivered"], done["deliveries"]
    assert not await firing()
    for workload in (first, waiting):
        await wait_for(workload["id"], lambda w: w["state"] == "succeeded", as_user="alice", timeout=60)


@pytest.mark.team(vision_a100=1)
async def test_a_tenants_quota_alert_is_seen_by_that_tenant_and_admins_only(team, webhook, api, wait_for,
                                                                             jp_root_dir):
    (jp_root_dir / "gate.py").write_text(GATE, encoding="utf-8")
    job = await api("workloads", "POST", {"kind": "job", "template": "training", "queue": "batch",
                                          "script": {"path": "gate.py", "args": [str(jp_root_dir / "open")]}},
                    as_user="alice")
    await wait_for(job["id"], lambda w: w["state"] == "running", as_user="alice")

    async def quota_alerts(user: str) -> list[dict]:
        return [a for a in await api("alerts", state="firing", as_user=user) if a["rule"] == "quota-nearly-exhausted"]

    [alert] = await until_async(lambda: quota_alerts("carol"), "vision's quota alert", timeout=30)
    assert (alert["subject"], alert["tenant"], alert["severity"]) == ("tenant/vision/a100-80g", "vision", "info")
    assert alert["message"] == "tenant vision uses 1 of its 1 a100-80g devices (100%)"
    assert [a["id"] for a in await quota_alerts("root")] == [alert["id"]]  # (its deliveries may have grown)
    assert await quota_alerts("bob") == []  # nlp's member does not see vision's
    (jp_root_dir / "open").touch()
    await wait_for(job["id"], lambda w: w["state"] == "succeeded", as_user="alice", timeout=60)
