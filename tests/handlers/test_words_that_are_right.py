"""What a workload is said to be (issue 37 item 5): ``explain`` in the asked language in every state, and the node
a list shows kept after the workload ended."""

from __future__ import annotations

import pytest

from jupyter_hetero.i18n import N_, Message

from .test_lifecycle import final, gate, running  # noqa: F401 - the gate fixture

STATE_ZH = {"running": "运行中", "succeeded": "已成功", "failed": "失败", "cancelled": "已取消"}


def said(source: str, language: str, **params) -> str:
    """What a catalog message reads in ``language``: the same words explain must use."""
    return Message(source, **params).text(language)


@pytest.mark.usefixtures("team")
async def test_explain_answers_in_chinese_while_it_runs_and_after_it_succeeded_failed_or_was_cancelled(
        api, wait_for, gate):  # noqa: F811
    ok = await api("workloads", "POST", gate.job("ok", template="data-preprocessing"), as_user="alice")
    bad = await api("workloads", "POST", gate.job("bad", 3, template="data-preprocessing", queue="experiment"), as_user="alice")
    stopped = await api("workloads", "POST", gate.job("never", template="data-preprocessing"), as_user="alice")
    node = (await wait_for(ok["id"], running, as_user="alice"))["node"]
    explained = await api(f"workloads/{ok['id']}/explain", lang="zh", as_user="alice")
    assert explained["summary"] == said(N_("{state} on {node}, attempt {attempt}"), "zh",
                                        state=Message(N_("running")), node=node, attempt=1)
    assert STATE_ZH["running"] in explained["summary"]

    await wait_for(stopped["id"], running, as_user="alice")
    await api(f"workloads/{stopped['id']}", "DELETE", as_user="alice")
    gate.open("ok")
    gate.open("bad")
    for workload, state, code in ((ok, "succeeded", 0), (bad, "failed", 3), (stopped, "cancelled", None)):
        ended = await wait_for(workload["id"], final, as_user="alice")
        assert ended["state"] == state, ended
        explained = await api(f"workloads/{workload['id']}/explain", lang="zh", as_user="alice")
        last = ended["attempts"][-1]
        assert explained["summary"] == said(N_("{state}; its last attempt ({attempt} of {count}) ran on {node}"), "zh",
                                            state=Message(N_(state)), attempt=1, count=1, node=last["node"])
        assert STATE_ZH[state] in explained["summary"], explained
        if code is not None:
            assert said(N_("attempt {attempt} exited with code {code}"), "zh", attempt=1, code=code) in explained["lines"]
        # The recorded reason is stored in English and read back in the asked language.
        reason_zh = {"succeeded": "退出码 0", "failed": "退出码 3", "cancelled": "被 alice 取消"}[state]
        assert explained["lines"][-1] == f"记录的原因：{reason_zh}", (ended["reason"], explained)
        english = await api(f"workloads/{workload['id']}/explain", as_user="alice")
        assert english["summary"].startswith(f"{state}; its last attempt (1 of 1) ran on {last['node']}"), english


@pytest.mark.usefixtures("team")
async def test_a_list_keeps_the_node_a_workload_ran_on_after_it_ended(api, wait_for, gate):  # noqa: F811
    submitted = await api("workloads", "POST", gate.job("g", template="data-preprocessing"), as_user="alice")
    node = (await wait_for(submitted["id"], running, as_user="alice"))["node"]
    [listed] = await api("workloads", as_user="alice")
    assert (listed["node"], listed["last_node"]) == (node, node)
    gate.open("g")
    await wait_for(submitted["id"], final, as_user="alice")
    [listed] = await api("workloads", as_user="alice")
    assert (listed["node"], listed["last_node"]) == (None, node)  # the scheduler's node is cleared; the list's kept
    assert (await api(f"workloads/{submitted['id']}", as_user="alice"))["last_node"] == node
    assert [w["last_node"] for w in await api("workloads", as_user="carol")] == [node]  # her tenant-admin sees it
    assert await api("workloads", as_user="bob") == []  # another tenant's member sees none of it
