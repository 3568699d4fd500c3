"""A Chinese sentence carries no English word (issue 37 item 2), through a real server: the blockers, the explanation
and the alerts of a job waiting on its tenant's quota, one asking more than the quota could ever give, one waiting on
another job, and of finished ones, read in Chinese, hold no ASCII letter but the names, ids and units they quote."""

from __future__ import annotations

import re

import pytest

from .test_lifecycle import final, gate, running  # noqa: F401 - the gate fixture

# Units and the abbreviations a Chinese text writes as they are.
UNITS = ("GiB", "MiB", "Gi", "Mi", "CPU", "ETA")


async def _names(api) -> set[str]:
    """Every name a sentence may quote: templates, queues, flavors, nodes, tenants and users."""
    templates, nodes = await api("templates", as_user="root"), await api("nodes", as_user="root")
    names = {t["name"] for t in templates} | {flavor for t in templates for flavor in t["flavors"]}
    names |= {q["name"] for q in await api("queues", as_user="root")}
    names |= {n["name"] for n in nodes} | {n["flavor"] for n in nodes if n["flavor"]}
    return names | {"vision", "nlp", "alice", "bob", "carol", "root"}


def english_words(text: str, names: set[str]) -> list[str]:
    """The runs of ASCII letters ``text`` holds once the names and units it quotes are taken out."""
    for name in sorted(names | set(UNITS), key=len, reverse=True):
        text = re.sub(rf"(?<![A-Za-z0-9_-]){re.escape(name)}(?![A-Za-z0-9_-])", " ", text)
    return re.findall(r"[A-Za-z]+", text)


def _sentences(workload: dict, explained: dict) -> list[str]:
    return ([b["message"] for b in workload.get("blockers", [])] + [explained["summary"], *explained["lines"]]
            + [b["message"] for b in explained.get("blockers", [])])


@pytest.mark.team
async def test_waiting_and_finished_work_reads_in_chinese_without_english_words(team, api, wait_for, gate):  # noqa: F811
    names = await _names(api)
    one_a100 = {"template": "training", "parameters": {"devices": 1, "flavor": "a100-80g"}}
    holder = await api("workloads", "POST", gate.job("holder", **one_a100), as_user="alice")
    await wait_for(holder["id"], running, as_user="alice")
    over_quota = await api("workloads", "POST", gate.job("second", **one_a100), as_user="alice")
    beyond = await api("workloads", "POST", gate.job("never", template="training",
                                                     parameters={"devices": 2, "flavor": "a100-80g"}), as_user="alice")
    after = await api("workloads", "POST", {**gate.job("after", template="data-preprocessing"),
                                            "after": [{"workload": holder["id"], "condition": "ok"}]}, as_user="alice")
    done = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing", "command": ["true"]},
                     as_user="alice")
    failed = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing", "command": ["false"]},
                       as_user="alice")
    waits = {over_quota["id"]: lambda w: any(b["kind"] == "quota" for b in w.get("blockers", [])),
             beyond["id"]: lambda w: w["state"] == "inadmissible",
             after["id"]: lambda w: any(b["kind"] == "after-ok" for b in w.get("blockers", [])),
             done["id"]: final, failed["id"]: lambda w: w["failures"] == 1}  # waiting to retry
    cancelled = await api("workloads", "POST", gate.job("cancelled", template="data-preprocessing"), as_user="alice")
    await api(f"workloads/{cancelled['id']}", "DELETE", as_user="alice")
    waits[cancelled["id"]] = final
    await wait_for(done["id"], final, as_user="alice")
    # A dependency that can no longer hold: it waited for the job that succeeded to fail.
    unmet = await api("workloads", "POST", {"kind": "job", "template": "data-preprocessing", "command": ["true"],
                                            "after": [{"workload": done["id"], "condition": "failed"}]},
                      as_user="alice")
    waits[unmet["id"]] = final
    for workload_id, ready in waits.items():
        await wait_for(workload_id, ready, as_user="alice")
    said = {}
    for workload_id in waits:
        workload = await api(f"workloads/{workload_id}", as_user="alice", lang="zh")
        explained = await api(f"workloads/{workload_id}/explain", as_user="alice", lang="zh")
        said[workload_id] = {text: english_words(text, names) for text in _sentences(workload, explained)}
    said["alerts"] = {a["message_zh"]: english_words(a["message_zh"], names) for a in await api("alerts", as_user="root")}
    assert {key: {text: words for text, words in texts.items() if words} for key, texts in said.items()} == {
        key: {} for key in said}
