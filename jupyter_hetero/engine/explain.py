"""Why a workload waits, in plain words (English and Simplified Chinese), and when it may start."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .decisions import Blocker, Lost
from .model import Workload
from .preemption import WhatIf

__all__ = ["estimate_eta", "rank", "render"]

# How many upcoming releases an ETA looks through before it answers "unknown".
ETA_HORIZON = 256

_MESSAGES: dict[str, tuple[str, str]] = {
    "quota": (
        "quota: tenant {tenant} uses {used}/{nominal} {resource} of flavor {flavor} in queue {queue} "
        "(borrowing limit {borrowing_limit})",
        "配额：租户 {tenant} 在队列 {queue} 中已使用规格 {flavor} 的 {resource} {used}/{nominal}（可借用上限 {borrowing_limit}）",
    ),
    "quota-not-preemptible": (
        "quota: tenant {tenant} uses {used}/{nominal} {resource} of flavor {flavor}; queue {queue} is never "
        "preempted, so it does not borrow quota that would have to be given back",
        "配额：租户 {tenant} 已使用规格 {flavor} 的 {resource} {used}/{nominal}；队列 {queue} 不会被抢占，因此不借用需要归还的配额",
    ),
    "quota-protected": (
        "quota: tenant {tenant} uses {used}/{nominal} {resource} of flavor {flavor}; this workload was preempted "
        "too often lately and is protected from preemption, so it does not borrow quota until the protection ends",
        "配额：租户 {tenant} 已使用规格 {flavor} 的 {resource} {used}/{nominal}；该作业近期被抢占次数过多，"
        "正受保护不被抢占，保护期结束前不借用配额",
    ),
    "no-quota": (
        "quota: tenant {tenant} has no quota for flavor {flavor}",
        "配额：租户 {tenant} 没有规格 {flavor} 的配额",
    ),
    "cohort": (
        "quota: other tenants of cohort {cohort} borrowed the {resource} of flavor {flavor} ({used}/{limit} in use); "
        "it is taken back from borrowers whose queues do not outrank queue {queue}, the rest as their work ends",
        "配额：资源池 {cohort} 中规格 {flavor} 的 {resource} 已被其他租户借用（已用 {used}/{limit}）；"
        "优先级不高于队列 {queue} 的借用者将被抢占收回，其余待其作业结束后归还",
    ),
    "cohort-borrow": (
        "quota: cohort {cohort} has no {resource} of flavor {flavor} left to lend ({used}/{limit} in use)",
        "配额：资源池 {cohort} 中规格 {flavor} 已没有可借出的 {resource}（已用 {used}/{limit}）",
    ),
    "capacity": (
        "capacity: flavor {flavor} has {free} free, needs {need}",
        "容量：规格 {flavor} 空闲 {free}，需要 {need}",
    ),
    "device-memory": (
        "capacity: no admitted node of flavor {flavor} has >= {need} device memory; nodes have {have}",
        "容量：规格 {flavor} 没有设备显存 >= {need} 的已准入节点；节点为 {have}",
    ),
    "reservation": (
        "reserved for inference: {reserved} of flavor {flavor} are kept for queue {owner}",
        "为推理预留：规格 {flavor} 的 {reserved} 保留给队列 {owner}",
    ),
    "held": (
        "capacity: flavor {flavor} is held for workload {holder}, which waited past its queue's max wait",
        "容量：规格 {flavor} 已为等待超时的作业 {holder} 保留",
    ),
    "preempting": (
        "preemption: waiting for {count} evicted workload(s) to release flavor {flavor} (grace ends in {grace_s} s)",
        "抢占：等待 {count} 个被抢占的作业释放规格 {flavor}（宽限期剩余 {grace_s} 秒）",
    ),
    "protected": (
        "preemption: the {count} workload(s) that could make room on flavor {flavor} were each preempted {limit} "
        "times in the last {window_s} s and are protected from preemption for {wait_s} s more",
        "抢占：规格 {flavor} 上可腾出资源的 {count} 个作业在过去 {window_s} 秒内已各被抢占 {limit} 次，"
        "还将受保护 {wait_s} 秒不被抢占",
    ),
    "driver": (
        "driver: template needs driver {need}, nodes of flavor {flavor} have {have}",
        "驱动：模板需要驱动版本 {need}，规格 {flavor} 的节点为 {have}",
    ),
    "runtime": (
        "runtime: template needs runtime {need}, nodes of flavor {flavor} have {have}",
        "运行时：模板需要运行时版本 {need}，规格 {flavor} 的节点为 {have}",
    ),
    "frameworks": (
        "frameworks: template needs {need}, nodes of flavor {flavor} provide {have}",
        "框架：模板需要 {need}，规格 {flavor} 的节点提供 {have}",
    ),
    "interconnect": (
        "interconnect: template needs {need}, nodes of flavor {flavor} have {have}",
        "互联：模板需要 {need}，规格 {flavor} 的节点为 {have}",
    ),
    "labels": (
        "labels: nodes of flavor {flavor} do not satisfy {need} (have {have})",
        "标签：规格 {flavor} 的节点不满足 {need}（实际 {have}）",
    ),
    "device-count": (
        "capacity: a replica needs {need} devices on one node, nodes of flavor {flavor} have {have}",
        "容量：每个副本需要单节点 {need} 张卡，规格 {flavor} 的节点只有 {have} 张",
    ),
    "flavor-devices": (
        "capacity: {need} devices are needed in all; the nodes of flavor {flavor} that could run it have {have} together",
        "容量：共需要 {need} 张卡；规格 {flavor} 中可运行它的节点合计只有 {have} 张",
    ),
    "node-cpu": (
        "capacity: {need} must fit on one node; the largest node of flavor {flavor} has {have}",
        "容量：单个节点需容纳 {need}，规格 {flavor} 最大的节点只有 {have}",
    ),
    "node-memory": (
        "capacity: {need} memory must fit on one node; the largest node of flavor {flavor} has {have}",
        "容量：单个节点需容纳内存 {need}，规格 {flavor} 最大的节点只有 {have}",
    ),
    "no-accelerator": (
        "capacity: flavor {flavor} has no accelerators",
        "容量：规格 {flavor} 没有加速卡",
    ),
    "variant": (
        "runtime: template has no runtime variant for the accelerators of flavor {flavor}",
        "运行时：模板没有适配规格 {flavor} 加速卡的运行时变体",
    ),
    "not-admitted": (
        "onboarding: nodes of flavor {flavor} are pending onboarding and not schedulable yet",
        "准入：规格 {flavor} 的节点尚未完成准入，暂不可调度",
    ),
    "no-nodes": (
        "capacity: no admitted node belongs to flavor {flavor}",
        "容量：没有属于规格 {flavor} 的已准入节点",
    ),
    # Lost running work (Decisions.lost), not blockers.
    "node-gone": (
        "node {node} is no longer in the inventory",
        "节点 {node} 已不在资源清单中",
    ),
    "device-gone": (
        "node {node} has {devices} devices now; the placement uses device {index}",
        "节点 {node} 现有 {devices} 张加速卡；该作业的放置使用第 {index} 号卡",
    ),
}


def render(blocker: Blocker | Lost, language: str = "en") -> str:
    """The blocker (or lost workload) as one sentence; ``language`` ``zh*`` gives Simplified Chinese."""
    english, chinese = _MESSAGES.get(blocker.kind, ("{kind}: {params}", "{kind}：{params}"))
    text = chinese if language.lower().startswith("zh") else english
    params: dict[str, Any] = {"kind": blocker.kind, "flavor": getattr(blocker, "flavor", None), "params": blocker.params}
    params.update(blocker.params)
    try:
        return text.format(**params)
    except (KeyError, IndexError):
        return f"{blocker.kind}: {blocker.params}"


def rank(blockers: Sequence[Blocker]) -> tuple[Blocker, ...]:
    """Closest to fitting first; ties keep the template's flavor order."""
    return tuple(sorted(blockers, key=lambda b: -b.closeness))


def estimate_eta(state: WhatIf, workload: Workload, flavors: Sequence[str],
                 releases: Sequence[tuple[float, Workload]], now: float,
                 may_borrow: bool = True, may_use_reserved: bool = True) -> tuple[float | None, int | None]:
    """The earliest time the workload fits if running work ends as expected and nothing else
    takes the capacity first; and the workload whose end makes room. The state is restored.

    Fitting only gets easier as more work ends, so the answer is the shortest prefix of
    ``releases`` after which the workload fits: found by doubling, then bisecting.
    """
    releases = releases[:ETA_HORIZON]
    removed = 0  # releases[:removed] are currently out of the state

    def out_until(count: int) -> None:
        nonlocal removed
        while removed < count:
            state.remove(releases[removed][1])
            removed += 1
        while removed > count:
            removed -= 1
            state.restore(releases[removed][1])

    def fits_after(count: int) -> bool:
        out_until(count)
        return any(state.fits(workload, flavor, may_borrow, may_use_reserved) for flavor in flavors)

    try:
        low, high = 0, 1  # fits after `high` releases, not after `low`
        while high <= len(releases) and not fits_after(high):
            low, high = high, high * 2
        if high > len(releases):
            if not releases or not fits_after(len(releases)):
                return None, None
            high = len(releases)
        while high - low > 1:
            middle = (low + high) // 2
            if fits_after(middle):
                high = middle
            else:
                low = middle
        end, running = releases[high - 1]
        return max(end, now), running.id
    finally:
        out_until(0)
