"""A workload's figures: what it reports of itself, and what was measured of it, with what was not and why.

    figures = WorkloadMetrics(catalog=catalog, repository=repository, access=access, clock=clock.wall)
    figures.report(identity, 7, ReportMetrics(metrics={"loss": 0.31, "step": 120}))  # its credential or its owner
    figures.describe(identity, 7, "en")   # {"workload", "declared", "series", "not_measured"}

A report is bounded in the store: at most one point per name and second (a later one in the same second
replaces it) and at most ``max_points`` per name, past which the oldest half is thinned to every other point:
a long run keeps its whole curve, coarser at the start, and a workload is never refused for reporting often.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...catalog import Catalog
from ...errors import Conflict, InvalidRequest, NotFound
from ...i18n import N_, Message, translate
from ...metric_names import is_measured
from ...models import ReportMetrics
from ...store import ACTIVE_STATES, Repository
from ...store.tables import AttemptRow, WorkloadRow
from ..access import Access
from ..identity import Identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from ..request_limits import ReportRate

__all__ = ["MAX_POINTS_PER_NAME", "WorkloadMetrics"]

# The most points a workload keeps of one reported name (then its oldest half is thinned).
MAX_POINTS_PER_NAME = 10_000
# A report's time may run this far ahead of the server's clock (clocks of two machines differ a little).
CLOCK_SKEW_S = 60.0
# The measured figures that need a device vendor's tool (or a cluster's exporter).
_DEVICE = ("device_util", "device_memory", "device_memory_peak")
# Kinds whose processes the scheduler starts and samples (scheduling.monitor.RUN_BY_BACKEND).
_SAMPLED_KINDS = ("job", "service")


class WorkloadMetrics(ReadsLiveCatalog):
    """The figures of workloads, for whoever may describe them, and reports from the workloads themselves."""

    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, access: Access,
                 clock: Callable[[], float], interval_s: float = 10.0, max_points: int = MAX_POINTS_PER_NAME,
                 unmeasured: Mapping[str, str] | None = None, rate: ReportRate | None = None) -> None:
        self.live_catalog = LiveCatalog.of(catalog)
        self.repository = repository
        self.access = access
        self.clock = clock  # wall time
        self.interval_s = interval_s
        self.max_points = max_points
        self.unmeasured = dict(unmeasured or {})  # what the backend cannot measure of any workload, and why
        self.rate = rate  # reports per workload and second: each is a write, and the store has one writer

    def report(self, identity: Identity, workload_id: int, body: ReportMetrics) -> dict[str, Any]:
        """Store figures a workload reports of itself: by its own credential or by its owner, while it runs."""
        row = self.repository.workload(workload_id)
        if row is None:
            raise NotFound(Message(N_("workload {workload} does not exist"), workload=workload_id))
        self._require_reporter(identity, row)
        if self.rate is not None:  # after the 403: no one else may drain a workload's bucket
            self.rate.admit(workload_id)
        for name in body.metrics:
            if is_measured(name):
                raise InvalidRequest(Message(N_("metrics.{name}: {name} is measured by the platform from the "
                                                "machine; report your own figure under another name"), name=name),
                                     field=f"metrics.{name}")
        if row.state not in ACTIVE_STATES or row.attempts < 1:
            raise Conflict(Message(N_("workload {workload} is {state}: figures are reported while it runs"),
                                   workload=workload_id, state=row.state), reason="not-running")
        now = self.clock()
        at = now if body.at is None else body.at
        if at > now + CLOCK_SKEW_S or at < row.created_at - CLOCK_SKEW_S:
            raise InvalidRequest(Message(N_("at: {at} is not a time during workload {workload} (Unix seconds, "
                                            "between its submission and now)"), at=at, workload=workload_id),
                                 field="at")
        thinned = self.repository.record_reported_metrics(workload_id, row.attempts, body.metrics, at=at,
                                                          max_points=self.max_points)
        return {"workload": workload_id, "attempt": row.attempts, "at": at, "stored": sorted(body.metrics),
                "thinned": thinned, "max_points": self.max_points}

    def _require_reporter(self, identity: Identity, row: WorkloadRow) -> None:
        if identity.own_work_only:
            if identity.workload == row.id:
                return
            self.access.deny(identity, "workload.metrics.report", f"workload/{row.id}",
                             Message(N_("a workload's credential reports only its own figures: this is workload "
                                        "{credential}'s, not workload {workload}'s"),
                                     credential=identity.workload, workload=row.id))
        if identity.user == row.user and identity.tenant is not None and identity.tenant.name == row.tenant:
            return
        self.access.deny(identity, "workload.metrics.report", f"workload/{row.id}",
                         Message(N_("only workload {workload}'s owner {owner} or the workload itself may report its "
                                    "figures"), workload=row.id, owner=row.user))

    def describe(self, identity: Identity, workload_id: int, language: str = "en") -> dict[str, Any]:
        """Every series of the workload, its template's declared names, and each name without figures with why."""
        row, attempts = self.repository.workload_with_attempts(workload_id)
        if row is None:
            raise NotFound(Message(N_("workload {workload} does not exist"), workload=workload_id))
        self.access.require_see(identity, row, "workload.metrics")
        template = self.catalog.template(row.template)
        declared = [metric if isinstance(metric, str) else metric.name for metric in (template.metrics if template else [])]
        series = self.repository.metric_series(workload_id)
        notes: dict[str, str] = dict(self.unmeasured) if attempts else {}
        for attempt in attempts:
            notes.update((attempt.metrics or {}).get("not_measured") or {})
        wanted = list(dict.fromkeys([*declared, *notes]))
        return {
            "workload": workload_id,
            "declared": declared,
            "series": [{"name": one.name, "unit": one.unit, "source": one.source, "points": one.points}
                       for _name, one in sorted(series.items())],
            "not_measured": [{"name": name, "why": self._why(name, row, attempts, notes, language)}
                             for name in wanted if name not in series],
        }

    def _why(self, name: str, row: WorkloadRow, attempts: list[AttemptRow], notes: dict[str, str],
             language: str) -> str:
        """Why ``name`` has no figures for this workload, in the reader's language."""
        if name in notes:  # a backend's or an attempt's note, said of several names at once: each line names its own
            return Message(N_("{name}: {why}"), name=name, why=translate(notes[name], language)).text(language)
        if not is_measured(name):
            return Message(N_("{name}: reported by the workload through jupyter_hetero.report(); none yet"),
                           name=name).text(language)
        if row.kind not in _SAMPLED_KINDS:
            return Message(N_("{name}: not measured for a {kind}: its processes are started by Jupyter, not by the "
                              "scheduler, which samples jobs and service replicas only"), name=name,
                           kind=row.kind).text(language)
        if not attempts:
            return Message(N_("{name}: measured while the workload runs; it has not run yet"), name=name).text(language)
        if name in _DEVICE:
            if not _has_devices(row, attempts):
                return Message(N_("{name}: needs NVIDIA, AMD, Ascend or Intel devices with their tool; this workload "
                                  "was given none"), name=name).text(language)
            said = next((a.metrics.get("device_note") for a in reversed(attempts) if (a.metrics or {}).get("device_note")),
                        None)
            if said:
                return Message(N_("{name}: its devices' tool did not measure them: {why}"), name=name,
                               why=said).text(language)
            return Message(N_("{name}: no reading of its devices' tool named one of the workload's processes yet "
                              "(an emulated node's devices are never measured)"), name=name).text(language)
        return Message(N_("{name}: sampled every {interval} s while it runs; no sample yet"), name=name,
                       interval=f"{self.interval_s:g}").text(language)


def _has_devices(row: WorkloadRow, attempts: list[AttemptRow]) -> bool:
    placements = [row.placement, *(attempt.placement for attempt in attempts)]
    return any(slot.get("devices") for placement in placements if placement
               for slot in placement.get("slots", []))


