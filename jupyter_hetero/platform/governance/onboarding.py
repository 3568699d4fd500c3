"""Onboarding: a node (with the catalog's ``onboarding.nodes: required``) and a tenant are accepted through a
checklist whose every step keeps its evidence; states ``requested -> verifying -> accepted`` or ``rejected`` with
the failed step.

    onboarding = OnboardingChecklist(...)
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

Until the checklist passes the node takes no work (``NodeView.readiness`` is ``onboarding``). A node rejected for
its driver is verified again when the catalog's minimum for its family changes (``POST /catalog/reload``).
Emulated nodes are accepted at once with ``accept_emulated`` (the demo's default).

A step that cannot run here is ``skipped`` with what it needs ("skipped: needs a ready amd node"), not failed:
each step's ``status`` is ``passed``, ``failed`` or ``skipped``, and a checklist whose steps passed or were
skipped is accepted.

A tenant's checklist: quota set, permissions (queues, templates) set, a member may submit (the access check a
submission makes, as that member), someone outside may not (the same check, refused). A chip model's: nodes of
it with their facts, a flavor that maps it, one of them onboarded. A framework's (a template's runtime variant
for a family): a ready node it can run on, and its frameworks imported where the variant runs
(``onboarding_frameworks.py``: its image, its environment, or the server's, which the evidence says). A model's (from the catalog's
``models``): run on a node of its template's flavors, its outputs within the tolerance of the reference, its
p95 latency and peak memory within their bounds.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...backends.base import Backend
from ...capability import NodeCapability
from ...catalog import Catalog
from ...engine import Request
from ...engine.matching import mismatch
from ...engine_inputs import constraints_for, node_state
from ...errors import Forbidden, NotFound
from ...i18n import N_, Message
from ...store import Repository
from ...store.tables import OnboardingRow
from ...units import compare_versions
from ..access import Access
from ..identity import Identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog
from ..scheduling.inventory import Inventory
from .onboarding_frameworks import framework_probe, judge
from .onboarding_probes import FAULT, MODEL_HARNESS, SAMPLE, difference
from .onboarding_runs import probe_launch, run_probe

__all__ = ["OnboardingChecklist", "Skipped", "onboarding_json"]

log = logging.getLogger(__name__)

# Whether a node can run a variant at all is asked with the smallest request: no devices, so no device checks.
_ANY_SIZE = Request(cpu=0, mem=0)


class Skipped(Exception):
    """A step that cannot run here, with what it needs: recorded as ``skipped: needs ...``, not as a failure."""

    def __init__(self, needs: str):
        super().__init__(needs)
        self.needs = needs


class OnboardingChecklist(ReadsLiveCatalog):
    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, inventory: Inventory,
                 backend: Backend,
                 access: Access, identify: Callable[[str, frozenset[str]], Identity], may_submit: Callable[[Identity, str, str], None],
                 metrics_nodes: Callable[[], set[str]], work_dir: Path, wake: Callable[[], None]):
        self.live_catalog = LiveCatalog.of(catalog)
        self.rules = self.catalog.onboarding  # replaced when the catalog is reloaded
        self.repository = repository
        self.inventory = inventory
        self.backend = backend
        self.access = access
        self.identify = identify  # (user, groups, owner=) -> who they are to the catalog
        self.may_submit = may_submit  # raises Forbidden when the identity may not submit to (template, queue)
        self.metrics_nodes = metrics_nodes  # the nodes the metrics endpoint names
        self.work_dir = Path(work_dir)
        self.wake = wake
        self._accepted = {row.name for row in repository.onboarding("node") if row.state == "accepted"}
        self._basis: dict[str, str | None] = {}  # node -> the driver minimum it was last verified against
        self._verifying: asyncio.Task | None = None
        self._runs = itertools.count(int(time.time()))  # each sample's own number (its folder, its pod's name)

    # -- nodes -------------------------------------------------------------------------------

    def attach(self) -> None:
        self.inventory.onboarded = self.onboarded
        self.inventory.refresh_onboarded()

    def onboarded(self, capability: NodeCapability) -> bool:
        rules = self.rules
        if rules.nodes == "off" or (capability.emulated and rules.accept_emulated):
            return True
        return capability.name in self._accepted

    def set_rules(self, rules) -> None:
        """New onboarding rules (a catalog reload): a node accepted under the old ones whose driver the new minimum
        refuses must pass again (it keeps its running work, takes no new work); one rejected for its driver is
        verified again by the next tick, when the minimum moved."""
        self.rules = rules
        for view in self.inventory.nodes():
            if view.name in self._accepted and not self._driver(view)[0]:
                self._accepted.discard(view.name)
                self._basis.pop(view.name, None)
        self.inventory.refresh_onboarded()

    def tick(self) -> None:
        """Verify the next node that waits for it (one at a time, in a worker thread)."""
        if self.rules.nodes == "off" or (self._verifying is not None and not self._verifying.done()):
            return
        for view in self.inventory.nodes():
            if view.readiness == "onboarding" and self._basis.get(view.name, "?") != self._minimum(view.capability):
                self._verifying = asyncio.ensure_future(asyncio.to_thread(self.verify_node, view.name, "server"))
                return

    def verify_node(self, name: str, by: str) -> dict[str, Any]:
        """Run the node's checklist now (blocking), record each step, accept it when every step passed."""
        view = self.inventory.node(name)
        if view is None:
            raise NotFound(Message(N_("node {node!r} does not exist"), node=name))
        self._basis[name] = self._minimum(view.capability)
        row = self._checklist("node", name, by, [
            ("capability", lambda: self._capability(view)), ("driver", lambda: self._driver(view)),
            ("sample", lambda: self._sample(view)), ("fault", lambda: self._fault(view)),
            ("metrics", lambda: self._metrics(view))])
        accepted = row.state == "accepted"
        (self._accepted.add if accepted else self._accepted.discard)(name)
        self.inventory.set_onboarded(name, accepted)
        if accepted:
            self.wake()  # it may take work now
        return onboarding_json(row)

    def _checklist(self, kind: str, name: str, by: str,
                   checks: list[tuple[str, Callable[[], tuple[bool, str]]]]) -> OnboardingRow:
        """Run the steps in order, recording each with its evidence; the first that fails rejects the subject."""
        steps: list[dict[str, Any]] = []
        self.repository.record_onboarding(kind, name, state="verifying", steps=steps, failed_step=None, by=by)
        for step, check in checks:
            try:
                ok, evidence = check()
                status = "passed" if ok else "failed"
            except Skipped as skipped:
                ok, status, evidence = True, "skipped", f"skipped: needs {skipped.needs}"
            except Exception as exc:  # a step that breaks fails, with why
                log.warning("jupyter-hetero: onboarding step %s of %s %s failed", step, kind, name, exc_info=True)
                ok, status, evidence = False, "failed", f"{type(exc).__name__}: {exc}"
            # ok: the step did not fail (old readers of ``ok`` see a skipped step as no failure).
            steps.append({"name": step, "ok": ok, "status": status, "evidence": evidence, "at": time.time()})
            if not ok:
                return self._decided(kind, name, by, "rejected", steps, step)
        return self._decided(kind, name, by, "accepted", steps, None)

    def _decided(self, kind: str, name: str, by: str, state: str, steps: list[dict[str, Any]],
                 failed: str | None) -> OnboardingRow:
        row = self.repository.record_onboarding(kind, name, state=state, steps=steps, failed_step=failed, by=by)
        self.repository.record_audit(actor=by, action=f"onboarding.{kind}", target=f"{kind}/{name}", outcome="done",
                                     detail={"state": state, "failed_step": failed,
                                             "steps": {step["name"]: step["ok"] for step in steps}})
        return row

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

    def _run(self, view, what: str, code: str, *, image: str | None = None,
             python: str | None = None) -> tuple[int | None, str]:
        """Run ``code`` on the node through the backend, as a replica of no workload (in ``image`` where pods run
        it, with the interpreter ``python`` where this machine does); its exit code and log."""
        run = next(self._runs)
        folder = self.work_dir / "onboarding" / view.name / f"{what}-{run}"
        folder.mkdir(parents=True, exist_ok=True)
        # Where pods run it: the image asked for, else the first template variant's for the node's family.
        family = view.capability.family.value if view.capability.family else "cpu"
        image = image or next((v.image for t in self.catalog.templates for v in t.variants
                               if v.family.value == family), "")
        launch = probe_launch(view, run=run, folder=folder, code=code, image=image, python=python,
                              runs_here=self.backend.runs_here)
        return run_probe(self.backend, launch, timeout_s=self.rules.sample_timeout_s)

    # -- tenants -----------------------------------------------------------------------------

    def verify_tenant(self, identity: Identity, name: str) -> dict[str, Any]:
        self.access.require_platform_admin(identity, "onboarding.tenant", f"tenant/{name}")
        tenant = self.catalog.tenant(name)
        if tenant is None:
            raise NotFound(Message(N_("tenant {tenant!r} does not exist"), tenant=name), field="name")
        queue = next((q.name for q in self.catalog.queues if tenant.allows_queue(q.name)), None)
        template = next((t.name for t in self.catalog.templates if tenant.allows_template(t.name)
                         and (queue is None or t.queue == queue or tenant.allows_queue(t.queue))), None)
        template_queue = self.catalog.template(template).queue if template else None
        # A member by name, or one of its groups'; the server's owner for the default tenant that names nobody
        # (it is the owner's); someone no tenant names.
        owners = name == self.catalog.default_tenant and not tenant.users and not tenant.groups
        member = (tenant.users[0], frozenset()) if tenant.users else \
            (f"onboarding-member-of-{name}", frozenset(tenant.groups[:1])) if tenant.groups else \
            ("the server's owner", frozenset()) if owners else None
        outsider = (f"onboarding-outsider-of-{name}", frozenset())
        row = self._checklist("tenant", name, identity.user, [
            ("quota", lambda: (bool(tenant.quotas), ", ".join(sorted(tenant.quotas)) or "no quota for any flavor")),
            ("permissions", lambda: (queue is not None and template is not None,
                                     f"queues {', '.join(tenant.queues) or 'none'}; "
                                     f"templates {', '.join(tenant.templates) or 'none'}")),
            ("member-submits", lambda: self._may(member, template, template_queue, expect=True, owner=owners)),
            ("non-member-refused", lambda: self._may(outsider, template, template_queue, expect=False)),
        ])
        return onboarding_json(row)

    # -- models ------------------------------------------------------------------------------

    def verify_model(self, identity: Identity, name: str) -> dict[str, Any]:
        """A catalog model run on a node its template matches: outputs against the reference within the tolerance,
        p95 latency and peak memory within their bounds."""
        self.access.require_platform_admin(identity, "onboarding.model", f"model/{name}")
        model = next((m for m in self.catalog.models if m.name == name), None)
        if model is None:
            raise NotFound(Message(N_("model {model!r} is not in the catalog"), model=name), field="name")
        template = self.catalog.template(model.template)
        node = next((v for v in self.inventory.nodes() if v.readiness == "ready" and template is not None
                     and v.flavor in template.flavors), None)
        measured: dict[str, Any] = {}

        def run() -> tuple[bool, str]:
            code, text = self._run(node, "model", MODEL_HARNESS.format(code=model.code, inputs=model.inputs,
                                                                       repeats=model.repeats))
            line = next((line for line in text.splitlines() if line.startswith("hetero-model ")), None)
            if code != 0 or line is None:
                return False, f"exit code {code}: {text.strip()[-300:]}"
            measured.update(json.loads(line.removeprefix("hetero-model ")))
            return True, f"ran {len(model.inputs)} input(s) x {model.repeats} on {node.name}"

        def outputs() -> tuple[bool, str]:
            worst = max(difference(got, want) for got, want in zip(measured["outputs"], model.expected, strict=True))
            return worst <= model.tolerance, f"largest difference from the reference {worst:.3g} (tolerance " \
                                             f"{model.tolerance:g})"

        def latency() -> tuple[bool, str]:
            return measured["p95_ms"] <= model.max_latency_ms, \
                f"p95 latency {measured['p95_ms']:.3f} ms (at most {model.max_latency_ms:g} ms)"

        def memory() -> tuple[bool, str]:
            return measured["peak_mib"] <= model.max_memory_mib, \
                f"peak memory {measured['peak_mib']:.1f} MiB (at most {model.max_memory_mib:g} MiB)"

        row = self._checklist("model", name, identity.user, [
            ("node", lambda: (node is not None, f"{node.name} ({node.flavor}) for template {model.template}" if node
                              else f"no ready node of template {model.template}'s flavors")),
            ("run", run), ("outputs", outputs), ("latency", latency), ("memory", memory)])
        return onboarding_json(row)

    # -- chips and frameworks ----------------------------------------------------------------

    def verify_chip(self, identity: Identity, model: str) -> dict[str, Any]:
        """A chip model: nodes of it are in the inventory with their facts, a flavor maps it, and one passed its own
        onboarding (or needs none)."""
        self.access.require_platform_admin(identity, "onboarding.chip", f"chip/{model}")
        nodes = [v for v in self.inventory.nodes() if v.capability.accelerator and v.capability.accelerator.model == model]
        if not nodes:
            raise NotFound(Message(N_("no node of the inventory has chip {model!r}"), model=model), field="name")

        def facts() -> tuple[bool, str]:
            known = [v for v in nodes if v.capability.accelerator.memory_mib and v.capability.accelerator.driver_version]
            return len(known) == len(nodes), "; ".join(
                f"{v.name}: {v.capability.accelerator.count} x {v.capability.accelerator.memory_mib} MiB, driver "
                f"{v.capability.accelerator.driver_version or 'unknown'}" for v in nodes)

        def flavor() -> tuple[bool, str]:
            flavors = sorted({v.flavor for v in nodes if v.flavor})
            return bool(flavors) and all(v.flavor for v in nodes), f"flavors {', '.join(flavors) or 'none'}"

        def onboarded() -> tuple[bool, str]:
            passed = [v.name for v in nodes if v.onboarded]
            return bool(passed), f"onboarded nodes: {', '.join(passed) or 'none'} of {len(nodes)}"

        row = self._checklist("chip", model, identity.user, [("nodes", lambda: (True, f"{len(nodes)} node(s)")),
                                                              ("facts", facts), ("flavor", flavor),
                                                              ("onboarded", onboarded)])
        return onboarding_json(row)

    def verify_framework(self, identity: Identity, template: str, family: str) -> dict[str, Any]:
        """A template's runtime variant for a family: a node it can run on, and its frameworks imported there."""
        self.access.require_platform_admin(identity, "onboarding.framework", f"framework/{template}/{family}")
        found = self.catalog.template(template)
        variant = next((v for v in found.variants if v.family.value == family), None) if found else None
        if variant is None:
            raise NotFound(Message(N_("template {template!r} has no variant for {family!r}"), template=template,
                                   family=family), field="name")
        # A node the engine would match for the variant: driver, runtime and firmware, what it requires, and the
        # template's frameworks, engines, network and labels (whatever the request's size).
        needs = constraints_for(found, (family,))
        of_family = [v for v in self.inventory.nodes() if v.capability.family.value == family]
        node = next((v for v in of_family if mismatch(node_state(v), _ANY_SIZE, needs) is None), None)
        probe = framework_probe(found, variant, runs_here=self.backend.runs_here)

        def runs_on() -> tuple[bool, str]:
            if not of_family:
                raise Skipped(f"a ready {family} node: the inventory has none")
            return node is not None, f"runs on {node.name}" if node else f"no ready {family} node matches the template"

        def imports() -> tuple[bool, str]:
            if node is None:
                raise Skipped(f"a ready {family} node to import on")
            exit_code, text = self._run(node, "framework", probe.code, image=variant.image, python=probe.python)
            status, evidence = judge(probe, exit_code, text)
            if status == "skipped":
                raise Skipped(evidence)
            return status == "passed", evidence

        row = self._checklist("framework", f"{template}/{family}", identity.user, [
            ("variant", lambda: (True, f"image {variant.image}, frameworks {', '.join(variant.frameworks) or 'none'}, "
                                       f"driver >= {variant.min_driver or 'any'}, runtime >= {variant.min_runtime or 'any'}"
                                       + (f", environment {variant.python}" if variant.python else ""))),
            ("node", runs_on),
            ("imports", imports),
        ])
        return onboarding_json(row)

    def _may(self, who: tuple[str, frozenset[str]] | None, template: str | None, queue: str | None, *,
             expect: bool, owner: bool = False) -> tuple[bool, str]:
        if who is None:
            raise Skipped("a member to submit as: the tenant names no user or group")
        if template is None or queue is None:
            return False, "no template and queue to try"
        user = who[0]
        try:
            self.may_submit(self.identify(*who, owner=owner), template, queue)
        except Forbidden as exc:
            return not expect, f"{user} submitting {template} to {queue}: refused ({exc.message})"
        return expect, f"{user} submitting {template} to {queue}: allowed"

    # -- the API's side ----------------------------------------------------------------------

    def list(self, identity: Identity) -> list[dict[str, Any]]:
        self.access.require_platform_admin(identity, "onboarding.read", "onboarding")
        return [onboarding_json(row) for row in self.repository.onboarding()]


def onboarding_json(row: OnboardingRow) -> dict[str, Any]:
    # Steps recorded before a step had a status were passed or failed.
    steps = [{**step, "status": step.get("status") or ("passed" if step["ok"] else "failed")} for step in row.steps]
    return {"kind": row.kind, "name": row.name, "state": row.state, "failed_step": row.failed_step,
            "steps": steps, "by": row.by, "updated_at": row.updated_at}

