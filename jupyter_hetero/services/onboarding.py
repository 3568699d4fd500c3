"""Onboarding: a node (with the catalog's ``onboarding.nodes: required``) and a tenant are admitted through a
checklist whose every step keeps its evidence; states ``pending -> verifying -> admitted`` or ``rejected`` with
the failed step.

    onboarding = OnboardingService(...)
    onboarding.attach()                  # the inventory asks it whether a node may take work
    onboarding.tick()                    # after each scheduler tick: verify the next node that waits
    onboarding.verify_tenant(identity, "vision")

A node's checklist, each step run in a worker thread:

1. ``capability``: its capability record was captured (family, chip, device count and memory);
2. ``driver``: its driver at or above the catalog's ``onboarding.min_driver`` for its family;
3. ``sample``: a sample job runs on that node through the backend that runs all work there (a matrix
   multiplication, with the node's device variables; ``nvidia-smi`` where the node has it) and succeeds;
4. ``fault``: a job that exits 3 on that node is seen as a failure with exit code 3 and its log;
5. ``metrics``: the node is in the metrics endpoint's families.

Until the checklist passes the node takes no work (``NodeView.admission`` is ``pending``). A node rejected for
its driver is verified again when the catalog's minimum for its family changes (``POST /catalog/reload``).
Emulated nodes are admitted at once with ``pre_admit_emulated`` (the demo's default).

A tenant's checklist: quota set, permissions (queues, templates) set, a member may submit (the access check a
submission makes, as that member), someone outside may not (the same check, refused).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..backends.base import Backend, Launch
from ..capability import NodeCapability
from ..catalog import Catalog
from ..errors import Forbidden, NotFound
from ..i18n import N_, Message
from ..store import Repository
from ..store.tables import OnboardingRow
from ..units import compare_versions
from .access import Access
from .environment import device_environment
from .identity import Identity
from .inventory import Inventory

__all__ = ["OnboardingService", "onboarding_json"]

log = logging.getLogger(__name__)

SAMPLE = """
import os, shutil, subprocess, sys
import numpy
a = numpy.random.default_rng(7).random((256, 256))
product = a @ a.T
print("hetero-sample matmul", product.shape, round(float(product.trace()), 3))
for name in ("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
    if os.environ.get(name):
        print("hetero-sample", name, os.environ[name])
if os.environ.get("HETERO_EMULATED") != "1" and shutil.which("nvidia-smi"):
    print(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=60).stdout.strip())
print("hetero-sample ok")
"""
FAULT = "print('hetero-fault-sample: exiting 3 on purpose'); import sys; sys.exit(3)"


class OnboardingService:
    def __init__(self, *, catalog: Catalog, repository: Repository, inventory: Inventory, backend: Backend,
                 access: Access, identify: Callable[[str, frozenset[str]], Identity], may_submit: Callable[[Identity, str, str], None],
                 metrics_nodes: Callable[[], set[str]], work_dir: Path, wake: Callable[[], None]):
        self.catalog = catalog
        self.rules = catalog.onboarding  # replaced when the catalog is reloaded
        self.repository = repository
        self.inventory = inventory
        self.backend = backend
        self.access = access
        self.identify = identify  # (user, groups) -> who they are to the catalog
        self.may_submit = may_submit  # raises Forbidden when the identity may not submit to (template, queue)
        self.metrics_nodes = metrics_nodes  # the nodes the metrics endpoint names
        self.work_dir = Path(work_dir)
        self.wake = wake
        self._admitted = {row.name for row in repository.onboarding("node") if row.state == "admitted"}
        self._basis: dict[str, str | None] = {}  # node -> the driver minimum it was last verified against
        self._verifying: asyncio.Task | None = None

    # -- nodes -------------------------------------------------------------------------------

    def attach(self) -> None:
        self.inventory.onboarded = self.onboarded
        self.inventory.refresh_onboarded()

    def onboarded(self, capability: NodeCapability) -> bool:
        rules = self.rules
        if rules.nodes == "off" or (capability.emulated and rules.pre_admit_emulated):
            return True
        return capability.name in self._admitted

    def tick(self) -> None:
        """Verify the next node that waits for it (one at a time, in a worker thread)."""
        if self.rules.nodes == "off" or (self._verifying is not None and not self._verifying.done()):
            return
        for view in self.inventory.nodes():
            if view.admission == "pending" and self._basis.get(view.name, "?") != self._minimum(view.capability):
                self._verifying = asyncio.ensure_future(asyncio.to_thread(self.verify_node, view.name, "server"))
                return

    def verify_node(self, name: str, by: str) -> dict[str, Any]:
        """Run the node's checklist now (blocking), record each step, admit it when every step passed."""
        view = self.inventory.node(name)
        if view is None:
            raise NotFound(Message(N_("node {node!r} does not exist"), node=name))
        capability = view.capability
        self._basis[name] = self._minimum(capability)
        steps: list[dict[str, Any]] = []
        self.repository.record_onboarding("node", name, state="verifying", steps=steps, failed_step=None, by=by)
        for step, check in (("capability", self._capability), ("driver", self._driver), ("sample", self._sample),
                            ("fault", self._fault), ("metrics", self._metrics)):
            try:
                ok, evidence = check(view)
            except Exception as exc:  # a step that breaks fails, with why
                log.warning("jupyter-hetero: onboarding step %s of node %s failed", step, name, exc_info=True)
                ok, evidence = False, f"{type(exc).__name__}: {exc}"
            steps.append({"name": step, "ok": ok, "evidence": evidence, "at": time.time()})
            if not ok:
                row = self.repository.record_onboarding("node", name, state="rejected", steps=steps, failed_step=step,
                                                        by=by)
                self._admitted.discard(name)
                self.inventory.set_onboarded(name, False)
                return onboarding_json(row)
        row = self.repository.record_onboarding("node", name, state="admitted", steps=steps, failed_step=None, by=by)
        self._admitted.add(name)
        self.inventory.set_onboarded(name, True)
        self.wake()  # it may take work now
        return onboarding_json(row)

    def _minimum(self, capability: NodeCapability) -> str | None:
        return self.rules.min_driver.get(capability.family.value) if capability.family else None

    @staticmethod
    def _capability(view) -> tuple[bool, str]:
        capability = view.capability
        accelerator = capability.accelerator
        if accelerator is None:
            return True, f"{capability.cpu_milli / 1000:g} CPU, {capability.memory_mib} MiB, no accelerator"
        ok = accelerator.count > 0 and accelerator.memory_mib > 0
        return ok, (f"{accelerator.count} x {accelerator.model} ({capability.family.value}), {accelerator.memory_mib} MiB "
                    f"each, driver {accelerator.driver_version or 'unknown'}, runtime {accelerator.runtime or 'unknown'}")

    def _driver(self, view) -> tuple[bool, str]:
        minimum = self._minimum(view.capability)
        driver = view.capability.accelerator.driver_version if view.capability.accelerator else None
        if minimum is None:
            return True, f"no minimum for {view.capability.family.value if view.capability.family else 'cpu'}"
        if driver is None:
            return False, f"driver unknown; the catalog's minimum is {minimum}"
        if compare_versions(driver, minimum) < 0:
            return False, f"driver {driver} is below the catalog's minimum {minimum}"
        return True, f"driver {driver} >= {minimum}"

    def _sample(self, view) -> tuple[bool, str]:
        code, log_text = self._run(view, "sample", SAMPLE)
        ok = code == 0 and "hetero-sample ok" in log_text
        return ok, f"exit code {code}; " + " | ".join(line for line in log_text.splitlines() if line.strip())[-400:]

    def _fault(self, view) -> tuple[bool, str]:
        code, log_text = self._run(view, "fault", FAULT)
        ok = code == 3 and "hetero-fault-sample" in log_text
        return ok, f"a job that exits 3 was seen as a failure with exit code {code} and its log: {log_text.strip()[:200]}"

    def _metrics(self, view) -> tuple[bool, str]:
        named = view.name in self.metrics_nodes()
        return named, "in hetero_node_devices and the other node families" if named else "not in the metrics"

    def _run(self, view, what: str, code: str) -> tuple[int | None, str]:
        """Run ``code`` on the node through the backend, as a replica of no workload; its exit code and log."""
        if not self.backend.runs_here:
            return None, f"the {self.backend.name} backend does not run onboarding samples yet"
        folder = self.work_dir / "onboarding" / view.name / f"{what}-{int(time.time() * 1000)}"
        folder.mkdir(parents=True, exist_ok=True)
        capability = view.capability
        devices = ((0, 1000, 0),) if capability.accelerator else ()
        env = {"PYTHONUNBUFFERED": "1", "HETERO_NODE": view.name, "HETERO_EMULATED": "1" if capability.emulated else "0",
               **(device_environment(capability.family.value if capability.family else "cpu", devices)
                  if self.backend.runs_here else {})}
        launch = Launch(workload_id=0, attempt=1, replica=0, node=view.name,
                        argv=["command", "--", sys.executable, "-c", code], env=env, cwd=folder,
                        log_path=folder / "log.txt", exit_path=folder / "exit.json", devices=tuple(d[0] for d in devices))
        handle = self.backend.launch(launch)
        deadline = time.monotonic() + self.rules.sample_timeout_s
        while self.backend.running(handle):
            if time.monotonic() > deadline:
                self.backend.kill(handle)
                return None, f"still running after {self.rules.sample_timeout_s} s: killed"
            time.sleep(0.1)
        ended = self.backend.exit(handle)
        text = launch.log_path.read_text(encoding="utf-8", errors="replace") if launch.log_path.exists() else ""
        return ended.code, text

    # -- tenants -----------------------------------------------------------------------------

    def verify_tenant(self, identity: Identity, name: str) -> dict[str, Any]:
        self.access.require_platform_admin(identity, "onboarding.tenant", f"tenant/{name}")
        tenant = self.catalog.tenant(name)
        if tenant is None:
            raise NotFound(Message(N_("tenant {tenant!r} does not exist"), tenant=name), field="name")
        steps: list[dict[str, Any]] = []

        def step(step_name: str, ok: bool, evidence: str) -> bool:
            steps.append({"name": step_name, "ok": ok, "evidence": evidence, "at": time.time()})
            return ok

        queue = next((q.name for q in self.catalog.queues if tenant.allows_queue(q.name)), None)
        template = next((t.name for t in self.catalog.templates if tenant.allows_template(t.name)
                         and (queue is None or t.queue == queue or tenant.allows_queue(t.queue))), None)
        template_queue = self.catalog.template(template).queue if template else None
        # A member by name, or one of its groups'; someone no tenant names.
        member = (tenant.users[0], frozenset()) if tenant.users else \
            (f"onboarding-member-of-{name}", frozenset(tenant.groups[:1])) if tenant.groups else None
        outsider = (f"onboarding-outsider-of-{name}", frozenset())
        checks = [
            lambda: step("quota", bool(tenant.quotas), ", ".join(sorted(tenant.quotas)) or "no quota for any flavor"),
            lambda: step("permissions", queue is not None and template is not None,
                         f"queues {', '.join(tenant.queues) or 'none'}; templates {', '.join(tenant.templates) or 'none'}"),
            lambda: step("member-submits", *self._may(member, template, template_queue, expect=True)),
            lambda: step("non-member-refused", *self._may(outsider, template, template_queue, expect=False)),
        ]
        failed = next((i for i, check in enumerate(checks) if not check()), None)
        row = self.repository.record_onboarding(
            "tenant", name, state="rejected" if failed is not None else "admitted", steps=steps,
            failed_step=steps[failed]["name"] if failed is not None else None, by=identity.user)
        return onboarding_json(row)

    def _may(self, who: tuple[str, frozenset[str]] | None, template: str | None, queue: str | None, *,
             expect: bool) -> tuple[bool, str]:
        if who is None or template is None or queue is None:
            return False, "no member named in the tenant" if who is None else "no template and queue to try"
        user = who[0]
        try:
            self.may_submit(self.identify(*who), template, queue)
        except Forbidden as exc:
            return not expect, f"{user} submitting {template} to {queue}: refused ({exc.message})"
        return expect, f"{user} submitting {template} to {queue}: allowed"

    # -- the API's side ----------------------------------------------------------------------

    def list(self, identity: Identity) -> list[dict[str, Any]]:
        self.access.require_platform_admin(identity, "onboarding.read", "onboarding")
        return [onboarding_json(row) for row in self.repository.onboarding()]


def onboarding_json(row: OnboardingRow) -> dict[str, Any]:
    return {"kind": row.kind, "name": row.name, "state": row.state, "failed_step": row.failed_step,
            "steps": row.steps, "by": row.by, "updated_at": row.updated_at}
