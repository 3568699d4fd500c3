"""Why a workload waits, in plain words (English and Simplified Chinese), and when it may start.

The sentences are English source strings; ``render`` reads them through the gettext catalog
(``jupyter_hetero.i18n``) in the language asked for, so no translation lives in the engine.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..i18n import N_, translate
from .decisions import Blocker, Lost
from .model import Workload
from .preemption import WhatIf

__all__ = ["STATE_WORDS", "estimate_eta", "rank", "render"]

# How many upcoming releases an ETA looks through before it answers "unknown".
ETA_HORIZON = 256

# A kind without a sentence of its own (a new blocker kind not yet worded) still reads as something.
_UNKNOWN = N_("{kind}: {params}")

_MESSAGES: dict[str, str] = {
    # What the cluster's Kueue says of a pod it holds (c.KubernetesConfig.admission = "kueue"; see
    # backends/kubernetes/kueue_status.py); {message} is Kueue's own English.
    "kueue-no-workload": N_("Kueue: waiting for Kueue to create the pod's Workload (LocalQueue {queue})"),
    "kueue-pending": N_("Kueue: LocalQueue {queue} has not reserved quota ({reason}): {message}"),
    "kueue-inadmissible": N_("Kueue: LocalQueue {queue} cannot admit the workload ({reason}): {message}"),
    "kueue-checks": N_("Kueue: quota reserved in ClusterQueue {cluster_queue}, waiting for admission checks: {message}"),
    "kueue-evicted": N_("Kueue: the workload was evicted ({reason}): {message}"),
    "kueue-requeue": N_("Kueue: requeued after {count} attempt(s); tried again at {requeue_at}"),
    "quota": N_(
        "quota: tenant {tenant} uses {used}/{nominal} {resource} of flavor {flavor} in queue {queue} "
        "(borrowing limit {borrowing_limit})"
    ),
    "quota-not-preemptible": N_(
        "quota: tenant {tenant} uses {used}/{nominal} {resource} of flavor {flavor}; queue {queue} is never "
        "preempted, so it does not borrow quota that would have to be given back"
    ),
    "quota-protected": N_(
        "quota: tenant {tenant} uses {used}/{nominal} {resource} of flavor {flavor}; this workload was preempted "
        "too often lately and is protected from preemption, so it does not borrow quota until the protection ends"
    ),
    "exceeds-quota": N_(
        "request exceeds the tenant's quota: it can never run as asked (it asks {need} {resource} of flavor {flavor}; "
        "tenant {tenant} has a quota of {nominal} and could borrow {borrowable} more)"
    ),
    "exceeds-quota-not-preemptible": N_(
        "request exceeds the tenant's quota: it can never run as asked (it asks {need} {resource} of flavor {flavor}; "
        "tenant {tenant} has a quota of {nominal}, and queue {queue} is never preempted, so it borrows none)"
    ),
    "no-quota": N_("quota: tenant {tenant} has no quota for flavor {flavor}"),
    "cohort": N_(
        "quota: other tenants of cohort {cohort} borrowed the {resource} of flavor {flavor} ({used}/{limit} in use); "
        "it is taken back from borrowers whose queues do not outrank queue {queue}, the rest as their work ends"
    ),
    "cohort-borrow": N_("quota: cohort {cohort} has no {resource} of flavor {flavor} left to lend ({used}/{limit} in use)"),
    "capacity": N_("capacity: flavor {flavor} has {free} free, needs {need}"),
    "device-memory": N_("capacity: no ready node of flavor {flavor} has >= {need} device memory; nodes have {have}"),
    "reservation": N_("reserved for inference: {reserved} of flavor {flavor} are kept for queue {owner}"),
    "held": N_("capacity: flavor {flavor} is held for workload {holder}, which waited past its queue's max wait"),
    "preempting": N_("preemption: waiting for {count} evicted workload(s) to release flavor {flavor} (grace ends in {grace_s} s)"),
    "protected": N_(
        "preemption: the {count} workload(s) that could make room on flavor {flavor} were each preempted {limit} "
        "times in the last {window_s} s and are protected from preemption for {wait_s} s more"
    ),
    "driver": N_("driver: template needs driver {need}, nodes of flavor {flavor} have {have}"),
    "runtime": N_("runtime: template needs runtime {need}, nodes of flavor {flavor} have {have}"),
    "firmware": N_("firmware: template needs firmware {need}, nodes of flavor {flavor} have {have}"),
    "variant-requires": N_(
        "runtime: the template's runtime variant for flavor {flavor} needs {need} on the node; its nodes provide {have}"
    ),
    "frameworks": N_("frameworks: template needs {need}, nodes of flavor {flavor} provide {have}"),
    "inference-engines": N_("inference engines: template needs {need}, nodes of flavor {flavor} provide {have}"),
    "rdma": N_("network: template needs RDMA, nodes of flavor {flavor} have none"),
    "bandwidth": N_("network: template needs {need} Gb/s or more, nodes of flavor {flavor} have {have} Gb/s"),
    "interconnect": N_("interconnect: template needs {need}, nodes of flavor {flavor} have {have}"),
    "link-domain": N_(
        "interconnect: a replica needs {need} devices on one fast link (one NVLink, HCCS, xGMI or Xe Link domain); "
        "the largest domain on nodes of flavor {flavor} has {have}"
    ),
    "labels": N_("labels: nodes of flavor {flavor} do not satisfy {need} (have {have})"),
    "device-count": N_("capacity: a replica needs {need} devices on one node, nodes of flavor {flavor} have {have}"),
    "device-sharing": N_("sharing: a replica needs a share of a device; nodes of flavor {flavor} give whole devices only"),
    "flavor-devices": N_("capacity: {need} devices are needed in all; the nodes of flavor {flavor} that could run it have {have} together"),
    "node-cpu": N_("capacity: {need} must fit on one node; the largest node of flavor {flavor} has {have}"),
    "node-memory": N_("capacity: {need} memory must fit on one node; the largest node of flavor {flavor} has {have}"),
    "no-accelerator": N_("capacity: flavor {flavor} has no accelerators"),
    "variant": N_("runtime: template has no runtime variant for the accelerators of flavor {flavor}"),
    "not-onboarded": N_("onboarding: nodes of flavor {flavor} are still onboarding and not schedulable yet"),
    "cordoned": N_(
        "cordoned: nodes of flavor {flavor} are cordoned and take no new work ({nodes} node(s), such as {have})"
    ),
    "node-lost": N_(
        "node lost: the nodes of flavor {flavor} left the inventory ({nodes} node(s), such as {have}); the work waits "
        "until one is back or another node joins the flavor"
    ),
    "no-nodes": N_("capacity: no ready node belongs to flavor {flavor}"),

    # A job held before the engine until a workload it awaits ends as asked (platform/scheduling/dependencies.py);
    # {state} is the awaited workload's state now.
    "after-ok": N_("dependency: waits for workload {workload} ({state}) to succeed"),
    "after-any": N_("dependency: waits for workload {workload} ({state}) to end"),
    "after-failed": N_("dependency: waits for workload {workload} ({state}) to fail"),
    # The same for an array's id, which stands for every task of the array (Slurm's array job id); {pending} of its
    # {size} tasks are still to end.
    "after-array-ok": N_("dependency: waits for every task of array {array} to succeed ({pending} of {size} still "
                         "to end)"),
    "after-array-any": N_("dependency: waits for every task of array {array} to end ({pending} of {size} still to "
                          "end)"),
    "after-array-failed": N_("dependency: waits for every task of array {array} to end, one of them failed ({pending} "
                             "of {size} still to end)"),
    # An array's task held before the engine while as many of its tasks as its limit allows run or are next in line,
    # lowest index first (platform/scheduling/holds.py).
    "array-limit": N_("array limit: array {array} runs at most {limit} tasks at once ({running} running, {next} next "
                      "in line)"),

    # Lost running work (Decisions.lost), not blockers.
    "node-gone": N_("node {node} is no longer in the inventory"),
    "device-gone": N_("node {node} has {devices} devices now; the placement uses device {index}"),
}


# A workload's states as people read them (the panel's words too), for a sentence that names one.
STATE_WORDS = {
    "queued": N_("queued"), "inadmissible": N_("inadmissible"), "admitted": N_("admitted"),
    "starting": N_("starting"), "running": N_("running"), "succeeded": N_("succeeded"), "failed": N_("failed"),
    "cancelled": N_("cancelled"), "preempted": N_("preempted"), "lost": N_("lost"),
}
# Figures that are words of ours, not names (a resource, a state, no limit), by the parameter that holds them: said in
# the reader's language, so a Chinese sentence carries no English word but the names, ids and units it quotes. A
# blocker keeps them in English (its events store them so, and read the same later in any language).
_WORDS: dict[str, dict[str, str]] = {
    "resource": {"devices": N_("devices"), "CPU": N_("CPU"), "GiB memory": N_("GiB memory")},
    "borrowing_limit": {"unlimited": N_("unlimited")},
    "state": STATE_WORDS,
}
# A count of devices as blockers.py writes one ("2 devices"), in the parameters that hold an amount.
_DEVICES = re.compile(r"(?P<devices>\d+(?:\.\d+)?) devices")
_AMOUNTS = ("free", "need", "have", "reserved")


def _said(name: str, value: Any, language: str) -> Any:
    if not isinstance(value, str):
        return value
    if value in _WORDS.get(name, {}):
        return translate(_WORDS[name][value], language)
    if name in _AMOUNTS and (count := _DEVICES.fullmatch(value)):
        return translate(N_("{devices} devices"), language).format(devices=count["devices"])
    return value


def render(blocker: Blocker | Lost, language: str = "en") -> str:
    """The blocker (or lost workload) as one sentence; ``language`` ``zh*`` gives Simplified Chinese."""
    text = translate(_MESSAGES.get(blocker.kind, _UNKNOWN), language)
    params: dict[str, Any] = {"kind": blocker.kind, "flavor": getattr(blocker, "flavor", None), "params": blocker.params}
    params.update({name: _said(name, value, language) for name, value in blocker.params.items()})
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
