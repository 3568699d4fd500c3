"""The Kubernetes backend: replicas as pods on the nodes this engine chose, seen through the reflector.

    backend = KubernetesBackend(config=KubernetesConfig(), api_client=client)
    backend.start(wake=loop.wake)          # lists and watches nodes, our pods and their events
    backend.poll_nodes()                   # the inventory, when the nodes changed since the last call
    handle = backend.launch(launch)        # a pod with required node affinity to launch.node
    backend.scan([handle])                 # alive by the reflector's cache: no API call per tick; device use
                                           # from the exporters' latest pass (KubernetesConfig.exporters)

Every call that talks to the API server blocks: the scheduler calls them from its worker thread, the
kernel provisioner through ``asyncio.to_thread``. Nothing here runs on the server's event loop.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

from ...capability import NodeCapability
from ..base import AdmissionWait, Exit, Launch, LaunchUnavailable, NodesSeen, Placed, ProcessHandle
from .config import KubernetesConfig
from .errors import QUOTA_MESSAGE, MalformedResponse, exceeded_quota, missing_permission
from .nodes import pod_requests, read_node
from .factory import PodFactory
from .identity import SERVICE_LABEL, endpoint_service_name
from .kueue_queues import KueueQueues, get_json
from .kueue_status import held_by_kueue, workload_blockers
from .objects import KUEUE_QUEUE_LABEL, credential_secret_name, make_credential_secret, owned_by_pod
from .pods import PodState, pod_problem, pod_state
from .cluster import KUEUE_API, ClusterReflector
from .telemetry import VENDOR_OF, ExporterScraper, NodeTarget, exporters_from_config

__all__ = ["KubernetesBackend"]

log = logging.getLogger(__name__)

MANAGED_SELECTOR = "app.kubernetes.io/managed-by=jupyter-hetero"
WORKLOAD_LABEL = "hetero.jupyter.org/workload-id"
# Seconds a pod we created may be missing from the reflector's cache before it counts as gone: the
# create answer comes before the watch event that shows it.
UNSEEN_GRACE_S = 30.0


class KubernetesBackend:
    """Runs replicas as pods, placed by required node affinity to the engine's node; the reflector's
    caches answer every question the scheduler asks each tick."""

    name = "kubernetes"
    runs_here = False  # the image gives a pod its environment, the device plugin its devices

    def __init__(self, *, config: KubernetesConfig, work_dir: str = "", api_client=None,
                 reflector: ClusterReflector | None = None, clock: Callable[[], float] = time.monotonic):
        self.config = config
        self.factory = PodFactory(config, work_dir)
        # Where our objects may be: the configured namespace, or one per tenant (set from the catalog).
        self.namespaces: tuple[str, ...] = () if config.per_tenant else (config.namespace,)
        self.server_url = config.server_url  # where pods reach the hetero API ("": the server's own URL)
        self.api_client = api_client or config.api_client()
        self.core = client.CoreV1Api(self.api_client)
        self.reflector = reflector or ClusterReflector(
            self.api_client, namespace=None if config.per_tenant else config.namespace,
            timeout_s=config.watch_timeout, resync_s=config.resync_interval, track_foreign=True,
            requests_of=pod_requests, track_kueue=config.admission == "kueue",
        )
        # Where the cluster's Kueue admits our pods: its order of those it holds, from its visibility API.
        self.kueue_queues = KueueQueues(self.api_client, timeout_s=config.api_timeout) \
            if config.admission == "kueue" else None
        self.clock = clock
        self._unseen: dict[str, float] = {}  # pods created, not yet in the cache -> when created
        self._unanswered: dict[str, float] = {}  # pods whose create went unanswered -> since when
        self._nodes_seen: tuple[int, int, frozenset[int]] | None = None
        self._readings: dict[str, tuple[dict, object, object]] = {}  # node -> (object, foreign requests, reading)
        self.findings: dict[str, tuple[str, ...]] = {}  # node -> what reading it found
        self._followers: dict[str, threading.Thread] = {}
        self._closed = threading.Event()
        self._started = False
        self._kernel_secrets: dict[str, str] = {}  # kernel pod -> its connection Secret
        self._credentials: set[str] = set()  # pods whose credential Secret this server created
        self._services: dict[str, str] = {}  # a multi-replica job's replica-0 pod -> its rendezvous Service
        self._exposed: set[tuple[str, str]] | None = None  # (namespace, name) of services' Services; None: not listed
        self._kernels: dict[int, str] = {}  # kernel workload -> its pod
        self._stopped: set[str] = set()  # pods this server deleted with their grace period (SIGTERM first)
        exporters = exporters_from_config(config.exporters)
        self.telemetry = ExporterScraper(exporters, targets=self.device_nodes, interval_s=config.exporter_interval,
                                         timeout_s=config.exporter_timeout) if exporters else None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, *, wake: Callable[[], None] | None = None, timeout: float = 30.0) -> None:
        """List and watch (once); returns when the caches are synced, or raises after ``timeout``.
        ``wake`` is called from the reflector's thread after changes."""
        if wake is not None:
            self.reflector.wake(wake)
        if self._started:
            return
        self._started = True
        if self.kueue_queues is not None:
            self._require_kueue()
        self.reflector.start()
        deadline = time.monotonic() + timeout
        # Waited in slices: a refused permission is answered at once and is no answer that is late.
        while not self.reflector.wait_synced(min(0.2, max(0.0, deadline - time.monotonic()))):
            refused = self.reflector.refused()
            if refused is not None:
                raise refused
            if time.monotonic() >= deadline:
                raise TimeoutError(f"the Kubernetes API server did not answer the first lists within {timeout:g} s")
        if self.telemetry is not None:
            self.telemetry.start()

    def _require_kueue(self) -> None:
        """With admission kueue, Kueue's Workload API must be served: without it every pod would wait at a gate
        nothing lifts (or, with no webhook, run unadmitted), and the start says so rather than waiting."""
        group, version = KUEUE_API
        try:
            get_json(self.api_client, f"/apis/{group}/{version}", self.config.api_timeout)
        except ApiException as exc:
            if exc.status == 404:
                raise RuntimeError(f"KubernetesConfig.admission is kueue, but the cluster does not serve Kueue's API "
                                   f"{group}/{version} (Kueue v0.16 or later): install Kueue, or set admission to "
                                   "hetero") from exc
            raise

    def close(self) -> None:
        self._closed.set()
        self.reflector.stop()
        if self.telemetry is not None:
            self.telemetry.stop()

    # -- inventory ---------------------------------------------------------------------------

    def poll_nodes(self, placed_servers: frozenset[int] = frozenset()) -> NodesSeen | None:
        """The nodes as capability records, their admission states (admitted, cordoned, lost) and what pods we
        did not place hold of them, when any of it changed since the last call; None otherwise. The pods of the
        hub servers in ``placed_servers`` (their workloads hold a placement) are not others': the engine counts
        them as those workloads."""
        if self._unanswered:
            self._delete_unanswered()
        left_out = self.reflector.placed_servers_seen(placed_servers)
        seen = (self.reflector.nodes.version, self.reflector.foreign.version, left_out)
        if seen == self._nodes_seen:
            return None
        self._nodes_seen = seen
        foreign = self.reflector.requests_by_node(left_out)
        capabilities, states, held, findings = [], {}, {}, {}
        readings = {}
        for node in self.reflector.nodes.items().values():
            others = foreign.get(node["metadata"]["name"], _NO_REQUESTS)
            # The caches replace an object that changes, never edit it: the same objects read the same.
            known = self._readings.get(node["metadata"]["name"])
            if known is not None and known[0] is node and known[1] is others:
                reading = known[2]
            else:
                reading = read_node(node, foreign=others, tolerated=self.config.tolerations)
            readings[reading.name] = (node, others, reading)
            if reading.findings:
                findings[reading.name] = reading.findings
            if reading.capability is None:
                continue
            capabilities.append(reading.capability)
            states[reading.name] = node_admission(node, reading.schedulable)
            held[reading.name] = reading.held
        for name, found in findings.items():
            if self.findings.get(name) != found:
                log.warning("jupyter-hetero: %s", "; ".join(found))
        self.findings, self._readings = findings, readings
        return NodesSeen(capabilities, states, held)

    def node_utilisation(self, capability: NodeCapability) -> dict | None:
        return None  # what a node uses is the metrics pipeline's business, not the API server's

    # -- device use --------------------------------------------------------------------------

    def device_nodes(self) -> list[NodeTarget]:
        """The nodes where our live pods hold devices, with their addresses and the devices' vendors: where the
        exporters are read."""
        vendors: dict[str, set[str]] = {}
        for pod in self.reflector.pods.items().values():
            node = (pod.get("spec") or {}).get("nodeName")
            held = {prefix for container in pod["spec"].get("containers", ())
                    for name in ((container.get("resources") or {}).get("limits") or {})
                    for prefix in VENDOR_OF.values() if name.startswith(prefix)} if node else set()
            if held and pod_state(pod).alive:
                vendors.setdefault(node, set()).update(held)
        nodes = self.reflector.nodes.items()
        return [NodeTarget(name, _internal_ip(nodes.get(name)), frozenset(held)) for name, held in sorted(vendors.items())]

    def _usage(self, handle: ProcessHandle) -> dict:
        if self.telemetry is None or not handle.devices:
            return {}
        return self.telemetry.usage(handle.pod, devices=len(handle.devices), node=handle.node)

    def kernel_usage(self, workload_id: int, *, devices: int, node: str) -> dict:
        """A kernel pod's device use from the exporters' latest pass, as :meth:`sample` gives a replica's."""
        key = self._kernels.get(workload_id)
        if self.telemetry is None or key is None:
            return {}
        return self.telemetry.usage(key, devices=devices, node=node)

    # -- replicas ----------------------------------------------------------------------------

    def launch(self, launch: Launch) -> ProcessHandle:
        pod, service = self.factory.job_objects(launch)
        namespace = pod.metadata.namespace
        key = f"{namespace}/{pod.metadata.name}"
        self._unseen[key] = self.clock()
        try:
            self._create_credential(pod, launch.env)
            uid = self._create(self.core.create_namespaced_pod, namespace, pod)
        except (LaunchUnavailable, MalformedResponse):
            # A create that timed out may yet make the pod: deleted now, and again should it show up later.
            self._unanswered[key] = self.clock()
            self.delete_pod(key, grace_s=0)
            raise
        except BaseException:
            self._delete_credential(key)
            raise
        if service is not None:  # replica 0's: Kubernetes deletes it with that pod, should we not
            self._create(self.core.create_namespaced_service, namespace,
                         owned_by_pod(service, pod, uid) if uid else service)
            self._services[key] = service.metadata.name
        self.follow_log(key, launch.log_path)
        return ProcessHandle(launch.replica, launch.node, 0, 0.0, str(launch.exit_path), launch.devices, False,
                             pod=key)

    def _delete_unanswered(self) -> None:
        """Pods whose create was not answered are deleted whenever they are seen (a late create made them), until
        they have had as long to show up as any pod has."""
        for key, since in list(self._unanswered.items()):
            if self.pod(key) is not None:
                self.delete_pod(key, grace_s=0)
            elif self.clock() - since >= UNSEEN_GRACE_S:
                del self._unanswered[key]

    def service_port(self) -> int:
        return self.config.service_port  # each pod has its own address

    def address(self, handle: ProcessHandle) -> str | None:
        state = self.pod_state(handle.pod)
        return state.ip if state is not None and state.alive else None

    def expose(self, services: frozenset[tuple[str, str]]) -> None:
        """A Service per (tenant, service) with live replicas, selecting its ready replicas; the others' deleted."""
        wanted = {(self.config.namespace_for(tenant), endpoint_service_name(name)): (tenant, name)
                  for tenant, name in services}
        if self._exposed is None:  # what an earlier server left
            self._exposed = set()
            for namespace in sorted(set(self.namespaces) | {namespace for namespace, _name in wanted}):
                response = self.core.list_namespaced_service(
                    namespace, label_selector=f"{MANAGED_SELECTOR},{SERVICE_LABEL}", _preload_content=False)
                self._exposed |= {(namespace, item["metadata"]["name"])
                                  for item in json.loads(response.data).get("items", [])}
        for namespace, name in sorted(wanted.keys() - self._exposed):
            tenant, service = wanted[(namespace, name)]
            self._create(self.core.create_namespaced_service, namespace,
                         self.factory.endpoint_service(service, tenant=tenant))
            self._exposed.add((namespace, name))
        for namespace, name in sorted(self._exposed - wanted.keys()):
            self._delete(partial(self.core.delete_namespaced_service, name, namespace), f"service {namespace}/{name}")
            self._exposed.discard((namespace, name))

    def _create_credential(self, pod: client.V1Pod, env: dict[str, str]) -> None:
        """The pod's credential Secret, created before the pod so that the kubelet finds it at the container's
        start (a missing one is a CreateContainerConfigError, which reads as a launch that cannot progress)."""
        secret = make_credential_secret(pod=pod, env=env)
        if secret is not None:
            self._credentials.add(f"{pod.metadata.namespace}/{pod.metadata.name}")
            self._create(self.core.create_namespaced_secret, pod.metadata.namespace, secret)

    def _delete_credential(self, key: str) -> None:
        """The credential Secret of the pod ``key``, if it has one: of a pod this server launched, or one that
        names it (a pod adopted after a restart)."""
        pod = self.pod(key)
        if key not in self._credentials and not (pod is not None and _names_credential(pod)):
            return
        self._credentials.discard(key)
        namespace, name = key.split("/", 1)
        secret = credential_secret_name(name)
        self._delete(partial(self.core.delete_namespaced_secret, secret, namespace), f"secret {namespace}/{secret}")

    def _create(self, create: Callable[..., object], namespace: str, body) -> str | None:
        """Create an object and return its uid; one that exists already (a launch repeated after a crash) is
        taken as is (None). An API server that fails (5xx, 429), times out or cannot be reached, or a
        namespace's ResourceQuota that is used up, raises LaunchUnavailable; one that refuses the object (any
        other 4xx, a missing permission among them), RuntimeError; an answer the client's models cannot read,
        MalformedResponse."""
        what = f"the creation of {type(body).__name__.removeprefix('V1').lower()} {namespace}/{body.metadata.name}"
        try:
            created = create(namespace, body, _request_timeout=(5, self.config.api_timeout))
        except ValueError as exc:
            # The models' setters refuse a field they hold required: an API server of another version than
            # the client's, a proxy's rewrite. Named here, it is no bare "must not be None" from deep inside.
            raise MalformedResponse(what, exc) from None
        except ApiException as exc:
            if exc.status >= 500 or exc.status == 429:
                raise LaunchUnavailable(f"the Kubernetes API failed: {_api_words(exc)} ({exc.status})") from None
            quota = exceeded_quota(exc)
            if quota is not None:  # it passes once other pods of the namespace end: wait, use no retry
                raise LaunchUnavailable(QUOTA_MESSAGE.format(namespace=namespace, quota=quota)) from None
            if exc.status != 409:
                raise RuntimeError(f"the Kubernetes API refused: {_api_words(exc)}") from None
            return None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise LaunchUnavailable(f"the Kubernetes API did not answer: {exc}") from None
        metadata = created.get("metadata", {}) if isinstance(created, dict) else getattr(created, "metadata", None)
        return (metadata.get("uid") if isinstance(metadata, dict) else getattr(metadata, "uid", None)) or None

    def pod(self, key: str) -> dict | None:
        return self.reflector.pods.items().get(key)

    def _alive(self, handle: ProcessHandle) -> bool:
        pod = self.pod(handle.pod)
        if pod is None:
            created = self._unseen.get(handle.pod)
            if created is not None and self.clock() - created >= UNSEEN_GRACE_S:
                del self._unseen[handle.pod]  # never seen: gone, and forgotten
                return False
            return created is not None
        self._unseen.pop(handle.pod, None)
        return pod_state(pod).alive

    def running(self, handle: ProcessHandle) -> bool:
        return self._alive(handle)

    def adopt(self, handles: list[ProcessHandle], log_path: Path) -> list[ProcessHandle]:
        """After a restart: the attempt's log is copied again from the start of each pod's log (the API
        server has all of it), so nothing is lost or doubled whenever the last server stopped."""
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_bytes(b"")
        for handle in handles:
            if self.pod(handle.pod) is not None:
                self.follow_log(handle.pod, log_path)
        return [handle for handle in handles if self._alive(handle)]

    def scan(self, handles: Iterable[ProcessHandle]) -> dict[ProcessHandle, dict]:
        return {handle: self._usage(handle) for handle in handles if self._alive(handle)}

    def sample(self, handle: ProcessHandle) -> dict:
        """Its devices' use (``gpu_util_pct``, ``gpu_memory_mib``) from the exporters' latest pass; {} when they
        are not measured (no exporter, or it has not reported all of them), with a ``device_note`` when an exporter
        failed."""
        return self._usage(handle)

    def exit(self, handle: ProcessHandle) -> Exit:
        """How the replica's pod ended; the pod (and its job's rendezvous Service) is deleted once read,
        its log having been copied."""
        pod = self.pod(handle.pod)
        state = pod_state(pod) if pod is not None else None
        record = _exit_record(handle.exit_path)
        follower = self._followers.get(handle.pod)
        if follower is not None:
            follower.join(timeout=2.0)  # the last lines of the log, before the pod goes
        self.delete_pod(handle.pod, grace_s=0)
        service = self._services.pop(handle.pod, None)
        if service is not None:
            self._delete(partial(self.core.delete_namespaced_service, service, handle.pod.split("/", 1)[0]),
                         f"service {service}")
        metrics = {"peak_rss_mib": record.get("peak_rss_mib")}
        stopped = handle.pod in self._stopped
        self._stopped.discard(handle.pod)
        if state is None:
            # A pod we stopped is removed by its kubelet as soon as its container has ended, mostly before the
            # cache sees it terminated: the runner's record on the work volume says how the job ended.
            if stopped and "exit_code" in record:
                return Exit(record["exit_code"], metrics)
            return Exit(None, metrics, reason="its pod was deleted")
        # The runner in the pod records the job's own exit code (its container's is only 0 or 1); when the
        # container was ended from outside (out of memory, evicted), the pod's word stands.
        code = record["exit_code"] if state.reason is None and "exit_code" in record else state.exit_code
        return Exit(code, metrics, reason=state.reason)

    def problem(self, handle: ProcessHandle) -> str | None:
        """Why a live replica's pod cannot make progress (unschedulable, image not pullable), once it has
        been so for longer than the configured patience; None otherwise."""
        return self.problem_of(handle.pod)

    def admission_wait(self, handle: ProcessHandle) -> AdmissionWait | None:
        """Kueue's word on a replica it still holds at its scheduling gate: its Workload's blockers and its place in
        Kueue's queues. None once Kueue admitted it, and always where this engine alone admits (admission hetero)."""
        pod = self.pod(handle.pod) if self.kueue_queues is not None and handle.pod else None
        if pod is None or not held_by_kueue(pod):
            return None
        meta = pod.get("metadata") or {}
        queue, uid = (meta.get("labels") or {}).get(KUEUE_QUEUE_LABEL, "?"), meta.get("uid", "")
        place = self.kueue_queues.position_of(meta.get("namespace", ""), queue, uid)
        return AdmissionWait("kueue", tuple(workload_blockers(self.reflector.kueue_workload_of(uid), queue)),
                             position=place.local_queue if place else None,
                             cluster_queue_position=place.cluster_queue if place else None)

    def signal_stop(self, handle: ProcessHandle) -> None:
        self._stopped.add(handle.pod)
        self.delete_pod(handle.pod, grace_s=None)

    def kill(self, handle: ProcessHandle) -> None:
        self.delete_pod(handle.pod, grace_s=0)

    def delete_pod(self, key: str, *, grace_s: int | None) -> None:
        """Delete a pod (None: with its own grace period: SIGTERM, then SIGKILL); a missing one is fine."""
        namespace, name = key.split("/", 1)
        options = client.V1DeleteOptions(grace_period_seconds=grace_s) if grace_s is not None else None
        self._delete(partial(self.core.delete_namespaced_pod, name, namespace, body=options), f"pod {key}")
        # The container read its credential when it started; once its pod is going, nothing may read it again.
        self._delete_credential(key)

    def _delete(self, call: Callable[[], object], what: str) -> None:
        try:
            # Not read into a model: the answer (the object, or a Status) says nothing a delete needs.
            _drain(call(_request_timeout=(5, self.config.api_timeout), _preload_content=False))
        except ApiException as exc:
            if exc.status != 404:
                # The Status of an RBAC 403 names the verb, resource and namespace it checked.
                refused = missing_permission(exc, verb="delete", resource=f"{what.split(' ', 1)[0]}s", namespace=None)
                log.warning("jupyter-hetero: could not delete %s: %s", what, refused or _api_words(exc))
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            log.warning("jupyter-hetero: could not delete %s: the Kubernetes API did not answer: %s", what, exc)

    def stop_cut_off(self, attempt_dir: Path) -> int:
        return 0  # a cut-off attempt's pods are held by no workload: collect_orphans deletes them

    def stop_left_kernels(self, kernel_ids: Iterable[str]) -> int:
        return 0  # a kernel's pod is held by no live workload after a restart: collect_orphans deletes it

    def collect_orphans(self, keep: Iterable[str]) -> list[str]:
        """Delete our pods that no live workload holds, and kernels' connection Secrets and jobs' Services
        (left by a server that stopped uncleanly: kernels never outlive their server)."""
        keep = set(keep)
        orphans = [key for key in self.reflector.pods.items() if key not in keep]
        for key in orphans:
            self.delete_pod(key, grace_s=0)
        held = {self.pod(key)["metadata"].get("labels", {}).get(WORKLOAD_LABEL) for key in keep if self.pod(key)}
        namespaces = set(self.namespaces) | {key.split("/", 1)[0] for key in self.reflector.pods.items()}
        kinds = (("secret", self.core.list_namespaced_secret, self.core.delete_namespaced_secret),
                 ("service", self.core.list_namespaced_service, self.core.delete_namespaced_service))
        for namespace in sorted(namespaces):
            for kind, listing, delete in kinds:
                try:
                    response = listing(namespace, label_selector=MANAGED_SELECTOR, _preload_content=False)
                except ApiException as exc:
                    # Left for a later restart: a cleanup the server's account may not do must not stop it.
                    refused = missing_permission(exc, verb="list", resource=f"{kind}s", namespace=namespace)
                    log.warning("jupyter-hetero: orphaned %ss in namespace %s are left: %s", kind, namespace,
                                refused or _api_words(exc))
                    continue
                for item in json.loads(response.data).get("items", []):
                    name, labels = item["metadata"]["name"], item["metadata"].get("labels", {})
                    if SERVICE_LABEL in labels:
                        continue  # a service's name in the cluster: kept while it has replicas to run (expose)
                    if labels.get(WORKLOAD_LABEL) not in held:
                        self._delete(partial(delete, name, namespace), f"{kind} {namespace}/{name}")
                        orphans.append(f"{namespace}/{name}")
        return orphans

    # -- kernels -----------------------------------------------------------------------------

    def launch_kernel(self, *, workload_id: int, attempt: int, node: str, placed: Placed, env: dict[str, str],
                      connection: dict) -> str:
        """A kernel's pod, then its connection Secret, owned by the pod (Kubernetes deletes it with the pod,
        should we not); the pod's "namespace/name". The server chose the key and ports: nothing comes back
        from the pod but its IP, through the API server. The kubelet holds the pod until its Secret is there."""
        secret, pod = self.factory.kernel_objects(workload_id=workload_id, attempt=attempt, node=node, placed=placed,
                                                  env=env, connection=connection)
        namespace = pod.metadata.namespace
        key = f"{namespace}/{pod.metadata.name}"
        self._unseen[key] = self.clock()
        try:
            self._create_credential(pod, env)
            uid = self._create(self.core.create_namespaced_pod, namespace, pod)
        except BaseException:
            self._delete_credential(key)
            raise
        self._kernel_secrets[key] = secret.metadata.name
        self._kernels[workload_id] = key
        try:
            self._create(self.core.create_namespaced_secret, namespace,
                         owned_by_pod(secret, pod, uid) if uid else secret)
        except BaseException:
            self.delete_kernel(key)
            raise
        return key

    def delete_kernel(self, key: str, *, grace_s: int | None = 0) -> None:
        """A kernel's pod and its connection Secret."""
        self.delete_pod(key, grace_s=grace_s)
        self._kernels = {workload: pod for workload, pod in self._kernels.items() if pod != key}
        secret = self._kernel_secrets.pop(key, None)
        if secret is not None:
            self._delete_secret(key.split("/", 1)[0], secret)

    def _delete_secret(self, namespace: str, name: str) -> None:
        try:
            _drain(self.core.delete_namespaced_secret(name, namespace, _preload_content=False))
        except ApiException as exc:
            if exc.status != 404:
                log.warning("jupyter-hetero: could not delete secret %s/%s: %s", namespace, name, _api_words(exc))

    def pod_state(self, key: str) -> PodState | None:
        """The pod's state as last seen; None when it is gone (or not seen yet: see :meth:`seen`)."""
        pod = self.pod(key)
        return pod_state(pod) if pod is not None else None

    def problem_of(self, key: str, *, patient: bool = True) -> str | None:
        """Why a pod that should be starting is not: after the configured patience, or at once."""
        pod = self.pod(key)
        if pod is None:
            return None
        return pod_problem(pod, self.reflector.events_of(*key.split("/", 1)), now_wall=time.time(),
                           unschedulable_s=self.config.unschedulable_timeout if patient else 0,
                           image_pull_s=self.config.image_pull_timeout if patient else 0)

    # -- logs --------------------------------------------------------------------------------

    def follow_log(self, key: str, log_path: Path) -> None:
        """Copy the pod's log into ``log_path`` as it is written (bytes as they come: never a character
        split by decoding a chunk), from a daemon thread that ends with the pod."""
        thread = threading.Thread(target=self._follow, args=(key, Path(log_path)), daemon=True,
                                  name=f"hetero-log-{key}")
        self._followers[key] = thread
        thread.start()

    def _follow(self, key: str, log_path: Path) -> None:
        namespace, name = key.split("/", 1)
        while not self._closed.is_set():
            pod = self.pod(key)
            if pod is not None and pod_state(pod).started:
                break
            if pod is None and key not in self._unseen:
                return
            if self._closed.wait(0.2):
                return
        try:
            response = self.core.read_namespaced_pod_log(name, namespace, follow=True, _preload_content=False)
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(log_path, "ab") as out:
                for chunk in response.stream(4096):
                    out.write(chunk)
                    out.flush()
                    if self._closed.is_set():
                        break
            response.release_conn()
        except (ApiException, OSError, urllib3.exceptions.HTTPError) as exc:  # a pod deleted mid-stream, say
            log.warning("jupyter-hetero: the log of pod %s could not be followed: %s", key, exc)
        finally:
            self._followers.pop(key, None)


_NO_REQUESTS = pod_requests({})


def node_admission(node: dict, schedulable: bool) -> str:
    """A node's admission state from the cluster: lost when not Ready, cordoned when it takes no new
    work (cordoned, or tainted in a way our pods do not tolerate), else admitted."""
    ready = next((c.get("status") for c in node.get("status", {}).get("conditions", ()) if c.get("type") == "Ready"),
                 None)
    if ready != "True":
        return "lost"
    return "admitted" if schedulable else "cordoned"


def _names_credential(pod: dict) -> bool:
    """Whether the pod's containers take a variable from its credential Secret."""
    secret = credential_secret_name(pod["metadata"]["name"])
    return any(((var.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name") == secret
               for container in (pod.get("spec") or {}).get("containers") or [] for var in container.get("env") or [])


def _internal_ip(node: dict | None) -> str:
    addresses = ((node or {}).get("status") or {}).get("addresses") or ()
    return next((a.get("address", "") for a in addresses if a.get("type") == "InternalIP"), "")


def _exit_record(path: str) -> dict:
    """What the runner left in the pod's exit file on the shared work volume (exit code, peak memory)."""
    try:
        with open(path, encoding="utf-8") as record:
            data = json.load(record)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _drain(response) -> None:
    """Read an answer we do not use and give its connection back to the pool."""
    try:
        response.data  # noqa: B018 - reading it is the point
    finally:
        response.release_conn()


def _api_words(exc: ApiException) -> str:
    try:
        return json.loads(exc.body).get("message") or exc.reason
    except (TypeError, ValueError, AttributeError):
        return str(exc.reason or exc.status)

