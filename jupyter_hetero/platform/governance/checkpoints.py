"""The acceptance report's checkpoints, each judged only by its own evidence: the quantity it names, measured.

    found = judge_checkpoints(by_task, attempts, releases, costs, measured, language="zh")
    # [{"task_type": "training", "items": [{"name": "device-memory", "status": "not-measured",
    #                                      "evidence": "...", "needs": "device memory per process from ..."}, ...]}]

An item is ``met`` when its own quantity was measured and is named in the evidence ("read 1.2 GB, wrote 310 MB
(procfs) in workloads 4, 7"), ``failed`` when it was measured and says the contrary (a failure that was not
retried), and ``not-measured`` when nothing measured it; then ``needs`` says what would. A stand-in (an archived
file for IO, the host's memory for device memory) never meets an item.

``measured`` is the store's latest figure of each metric per workload, ``{id: {name: (value, source)}}``, as
``Repository.latest_metrics`` answers it. Each evidence sentence is a catalog message with its figures as
parameters, rendered (with ``needs``) in ``language``: a Chinese report says its evidence in Chinese too. Pure: no
I/O, no clock, except for looking into archive directories.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ...i18n import N_, Message, translate
from ...store.tables import AttemptRow, WorkloadRow

__all__ = ["CHECKPOINTS", "FAILED", "MET", "NEEDS", "NOT_MEASURED", "judge_checkpoints"]

MET, FAILED, NOT_MEASURED = "met", "failed", "not-measured"
# The task types a platform is accepted by, and what each must show.
CHECKPOINTS = {
    "data-preprocessing": ("template", "io", "retries"),
    "training": ("device-memory", "communication", "checkpoint"),
    "online-inference": ("latency", "throughput", "rollback"),
    "batch-inference": ("queueing", "cost", "archived-results"),
}
# What would measure each item, when nothing did (translated where shown).
NEEDS = {
    "template": N_("a data-preprocessing job run from a template in the period"),
    "io": N_("bytes read and written per process (/proc/PID/io) of a data-preprocessing job's attempts"),
    "retries": N_("a data-preprocessing attempt that fails, so that its retry is seen"),
    "device-memory": N_("device memory per process from the vendor's tool (nvidia-smi, amd-smi, npu-smi, xpu-smi) "
                        "on a node with devices"),
    "communication": N_("a collective figure the training job reports (jupyter_hetero.report("
                        "collective_bandwidth_gbps=...)), or network bytes measured per replica of a multi-replica "
                        "job"),
    "checkpoint": N_("a training job that writes into $HETERO_CHECKPOINT_DIR"),
    "latency": N_("a rollout judged on the canary's p95 latency (traffic through the service's proxy)"),
    "throughput": N_("a rollout judged on the canary's requests per second"),
    "rollback": N_("a rollout whose canary fails its judgement and is rolled back"),
    "queueing": N_("a batch-inference job admitted from its queue in the period"),
    "cost": N_("batch-inference usage priced by the catalog"),
    "archived-results": N_("a batch-inference job that writes into $HETERO_OUTPUT_DIR"),
}
# Reported figures that show a job's collective communication (the workload names them; see metric_names).
COLLECTIVE_PREFIXES = ("collective_", "allreduce_", "allgather_", "reduce_scatter_", "alltoall_", "broadcast_")

Measured = Mapping[int, Mapping[str, tuple[float, str]]]

# The evidence sentences, each with its figures as parameters (translated where read).
TEMPLATE_RUNS = N_("{count} submitted from {templates}, succeeded: workloads {ids}")
NO_TEMPLATE = N_("no template")
NONE = N_("none")
IO_NOT_MEASURED = N_("no bytes read or written were measured for {count} workloads")
IO_MEASURED = N_("read {read}, wrote {wrote} ({sources}) in workloads {ids}")
RETRIES = N_("failed and retried: workloads {retried}; failed without a retry: workloads {not_retried}")
DEVICE_MEMORY_NOT_MEASURED = N_("no device memory was measured for {attempts} ended attempts of {count} workloads")
DEVICE_MEMORY_NOT_MEASURED_SAID = N_("no device memory was measured for {attempts} ended attempts of {count} "
                                     "workloads; the nodes said: {notes}")
DEVICE_MEMORY_PEAK = N_("device memory peak {peak} MiB ({sources}) in workloads {ids}")
COMMUNICATION_NOT_MEASURED = N_("no collective figure reported and no network bytes measured for {count} workloads")
COLLECTIVE_FIGURE = N_("{name} {value} ({measured_by}) in workload {workload}")
NETWORK_BYTES = N_("{bytes} over the network ({measured_by}) in workload {workload}")
CHECKPOINTS_WRITTEN = N_("checkpoints written by workloads {ids} of {count} training workloads")
CANARY_LATENCY = N_("{service} r{revision} canary p95 {p95} ms")
NO_LATENCY = N_("no rollout judged on latency")
CANARY_THROUGHPUT = N_("{service} r{revision} canary {rate} requests/s")
NO_THROUGHPUT = N_("no rollout judged on requests/s")
ROLLED_BACK = {"rolled-back": N_("{service} r{revision} rolled-back"),
               "rolled-back-to": N_("{service} r{revision} rolled-back-to")}
NO_ROLLBACK = N_("no rollback")
NO_WAIT = N_("no wait recorded for {count} workloads")
WAITS = N_("waits of {shortest} s to {longest} s recorded for workloads {ids}")
COST = N_("cost {cost} at the catalog's prices for {templates}")
ARCHIVED = N_("results archived for workloads {ids}")


class _Joined(Message):
    """Several messages read as one, each in the reader's language: ``"a; b"``."""

    def __init__(self, parts: list[Message], separator: str):
        super().__init__("")
        self.parts, self.separator = parts, separator

    def text(self, language: str = "en") -> str:
        return self.separator.join(part.text(language) for part in self.parts)


def judge_checkpoints(by_task: Mapping[str, list[WorkloadRow]], attempts: Mapping[int, list[AttemptRow]],
                      releases: list[dict[str, Any]], costs: Mapping[str, float],
                      measured: Measured, *, language: str = "en") -> list[dict[str, Any]]:
    """Per task type, its items, each met, failed or not measured from its own evidence, said in ``language``."""
    return [{**check, "items": [{**item, "evidence": item["evidence"].text(language),
                                 "needs": translate(item["needs"], language) if item["needs"] else None}
                                for item in check["items"]]}
            for check in _judged(by_task, attempts, releases, costs, measured)]


def _judged(by_task: Mapping[str, list[WorkloadRow]], attempts: Mapping[int, list[AttemptRow]],
            releases: list[dict[str, Any]], costs: Mapping[str, float], measured: Measured) -> list[dict[str, Any]]:
    preprocessing = by_task.get("data-preprocessing", [])
    training = by_task.get("training", []) + by_task.get("fine-tuning", [])
    batch = by_task.get("batch-inference", [])
    return [
        {"task_type": "data-preprocessing", "items": [
            _template(preprocessing), _io(preprocessing, measured), _retries(preprocessing, attempts)]},
        {"task_type": "training", "items": [
            _device_memory(training, attempts, measured), _communication(training, attempts, measured),
            _checkpoint(training)]},
        {"task_type": "online-inference", "items": _online(releases)},
        {"task_type": "batch-inference", "items": [
            _queueing(batch), _cost(batch, costs), _archived(batch, attempts)]},
    ]


def _item(name: str, status: str, evidence: Message) -> dict[str, Any]:
    return {"name": name, "status": status, "evidence": evidence,
            "needs": NEEDS[name] if status == NOT_MEASURED else None}


def _template(rows: list[WorkloadRow]) -> dict[str, Any]:
    templates = ", ".join(sorted({row.template for row in rows})) or Message(NO_TEMPLATE)
    succeeded = [row.id for row in rows if row.state == "succeeded"]
    ended = [row.id for row in rows if row.state in ("succeeded", "failed", "cancelled", "lost")]
    evidence = Message(TEMPLATE_RUNS, count=len(rows), templates=templates, ids=_ids(succeeded))
    if succeeded:
        return _item("template", MET, evidence)
    return _item("template", FAILED if ended else NOT_MEASURED, evidence)


def _io(rows: list[WorkloadRow], measured: Measured) -> dict[str, Any]:
    read, wrote, sources, named = 0.0, 0.0, set(), []
    for row in rows:
        figures = measured.get(row.id, {})
        if "io_read_bytes" in figures or "io_write_bytes" in figures:
            named.append(row.id)
            for name, value, source in _figures(figures, ("io_read_bytes", "io_write_bytes")):
                read += value if name == "io_read_bytes" else 0
                wrote += value if name == "io_write_bytes" else 0
                sources.add(source)
    if not named:
        return _item("io", NOT_MEASURED, Message(IO_NOT_MEASURED, count=len(rows)))
    return _item("io", MET, Message(IO_MEASURED, read=_bytes(read), wrote=_bytes(wrote),
                                    sources=", ".join(sorted(sources)), ids=_ids(named)))


def _retries(rows: list[WorkloadRow], attempts: Mapping[int, list[AttemptRow]]) -> dict[str, Any]:
    retried, not_retried = [], []
    for row in rows:
        mine = sorted(attempts.get(row.id, ()), key=lambda a: a.number)
        failed = [a for a in mine if a.outcome == "failed"]
        if not failed:
            continue
        # A failure followed by another attempt was retried; one that ended its workload on the first try was not.
        if any(a.number > failed[0].number for a in mine):
            retried.append(row.id)
        elif row.state == "failed":
            not_retried.append(row.id)
    evidence = Message(RETRIES, retried=_ids(retried), not_retried=_ids(not_retried))
    if not_retried:
        return _item("retries", FAILED, evidence)
    return _item("retries", MET if retried else NOT_MEASURED, evidence)


def _device_memory(rows: list[WorkloadRow], attempts: Mapping[int, list[AttemptRow]],
                   measured: Measured) -> dict[str, Any]:
    peaks: dict[int, tuple[float, str]] = {}
    for row in rows:
        figure = measured.get(row.id, {}).get("device_memory_peak")
        if figure is not None:
            peaks[row.id] = (figure[0], figure[1])
    ended = [a for row in rows for a in attempts.get(row.id, ()) if a.outcome]
    if not peaks:
        notes = sorted({(a.metrics or {}).get("device_note") for a in ended} - {None})
        said = Message(DEVICE_MEMORY_NOT_MEASURED_SAID if notes else DEVICE_MEMORY_NOT_MEASURED, attempts=len(ended),
                       count=len(rows), notes="; ".join(notes))
        return _item("device-memory", NOT_MEASURED, said)
    top = max(value for value, _source in peaks.values())
    sources = ", ".join(sorted({source for _value, source in peaks.values()}))
    return _item("device-memory", MET, Message(DEVICE_MEMORY_PEAK, peak=f"{top:g}", sources=sources,
                                               ids=_ids(list(peaks))))


def _communication(rows: list[WorkloadRow], attempts: Mapping[int, list[AttemptRow]],
                   measured: Measured) -> dict[str, Any]:
    reported, network = [], []
    for row in rows:
        figures = measured.get(row.id, {})
        reported += [(row.id, name, value, source) for name, (value, source) in sorted(figures.items())
                     if name.startswith(COLLECTIVE_PREFIXES)]
        replicas = max((len((a.placement or {}).get("slots") or ()) for a in attempts.get(row.id, ())), default=0)
        moved = _figures(figures, ("net_rx_bytes", "net_tx_bytes"))
        if replicas > 1 and moved:  # one replica's traffic is not communication between replicas
            network.append((row.id, sum(value for _n, value, _s in moved),
                            ", ".join(sorted({source for _n, _v, source in moved}))))
    if not reported and not network:
        return _item("communication", NOT_MEASURED, Message(COMMUNICATION_NOT_MEASURED, count=len(rows)))
    said = [Message(COLLECTIVE_FIGURE, name=name, value=f"{value:g}", measured_by=source, workload=wid)
            for wid, name, value, source in reported]
    said += [Message(NETWORK_BYTES, bytes=_bytes(total), measured_by=source, workload=wid)
             for wid, total, source in network]
    return _item("communication", MET, _Joined(said, "; "))


def _checkpoint(rows: list[WorkloadRow]) -> dict[str, Any]:
    written = [row.id for row in rows if row.checkpoint_at is not None]
    return _item("checkpoint", MET if written else NOT_MEASURED,
                 Message(CHECKPOINTS_WRITTEN, ids=_ids(written), count=len(rows)))


def _online(releases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    judged = [r for r in releases if r.get("canary") or r.get("stable")]
    latency = [(r, (r.get("canary") or {}).get("latency_ms") or {}) for r in judged]
    latency = [(r, figures) for r, figures in latency if figures.get("p95") is not None]
    throughput = [r for r in judged if (r.get("canary") or {}).get("requests_per_s") is not None]
    rolled_back = [r for r in releases if r.get("outcome") in ("rolled-back", "rolled-back-to")]
    return [
        _item("latency", MET if latency else NOT_MEASURED,
              _Joined([Message(CANARY_LATENCY, service=r["service"], revision=r["revision"], p95=f"{figures['p95']:g}")
                       for r, figures in latency], "; ") if latency else Message(NO_LATENCY)),
        _item("throughput", MET if throughput else NOT_MEASURED,
              _Joined([Message(CANARY_THROUGHPUT, service=r["service"], revision=r["revision"],
                               rate=f"{r['canary']['requests_per_s']:g}") for r in throughput], "; ")
              if throughput else Message(NO_THROUGHPUT)),
        _item("rollback", MET if rolled_back else NOT_MEASURED,
              _Joined([Message(ROLLED_BACK[r["outcome"]], service=r["service"], revision=r["revision"])
                       for r in rolled_back], ", ") if rolled_back else Message(NO_ROLLBACK)),
    ]


def _queueing(rows: list[WorkloadRow]) -> dict[str, Any]:
    waits = sorted((row.admitted_at - row.created_at, row.id) for row in rows if row.admitted_at is not None)
    if not waits:
        return _item("queueing", NOT_MEASURED, Message(NO_WAIT, count=len(rows)))
    return _item("queueing", MET, Message(WAITS, shortest=f"{waits[0][0]:.1f}", longest=f"{waits[-1][0]:.1f}",
                                          ids=_ids([wid for _wait, wid in waits])))


def _cost(rows: list[WorkloadRow], costs: Mapping[str, float]) -> dict[str, Any]:
    templates = sorted({row.template for row in rows})
    costed = sum(costs.get(template, 0.0) for template in templates)
    evidence = Message(COST, cost=f"{costed:.6g}", templates=", ".join(templates) or Message(NO_TEMPLATE))
    return _item("cost", MET if costed > 0 else NOT_MEASURED, evidence)


def _archived(rows: list[WorkloadRow], attempts: Mapping[int, list[AttemptRow]]) -> dict[str, Any]:
    archived = [row.id for row in rows for a in attempts.get(row.id, ()) if _has_outputs(a.archive_path)]
    return _item("archived-results", MET if archived else NOT_MEASURED, Message(ARCHIVED, ids=_ids(archived)))


def _figures(figures: Mapping[str, tuple[float, str]], names: Iterable[str]) -> list[tuple[str, float, str]]:
    return [(name, float(figures[name][0]), figures[name][1]) for name in names if name in figures]


def _has_outputs(archive: str | None) -> bool:
    if not archive:
        return False
    outputs = Path(archive) / "outputs"
    return outputs.is_dir() and any(outputs.iterdir())


def _ids(ids: Iterable[int]) -> str | Message:
    return ", ".join(map(str, sorted(set(ids)))) or Message(NONE)


def _bytes(value: float) -> str:
    """``1234567890`` -> ``"1.2 GB"``: bytes for people to read, in powers of 1000."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:.1f}".removesuffix(".0") + f" {unit}"
    return f"{value:g} B"
