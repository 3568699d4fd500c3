"""The Kubernetes backend: replicas as pods on the nodes this engine chose, seen through the reflector.

    backend = KubernetesBackend(config=KubernetesConfig(), api_client=client)
    backend.start(wake=loop.wake)          # lists and watches nodes, our pods and their events
    backend.poll_nodes()                   # the inventory, when the nodes changed since the last call
    handle = backend.launch(launch)        # a pod with required node affinity to launch.node
    backend.scan([handle])                 # alive by the reflector's cache: no API call per tick; device use
                                           # from the exporters' latest pass (KubernetesConfig.exporters)

Every call that talks to the API server blocks: the scheduler calls them from its worker thread, the
kernel provisioner through ``asyncio.to_thread``. Nothing here runs on the server's event loop.

Its parts, each a class of its own module that the backend is made of: ``api_calls.py`` (creates and deletes,
failures read), ``pod_lifecycle.py`` (what every pod shares: the cache, its credential, its deletion, its log),
``replicas.py``, ``kernel_pods.py``, ``endpoints.py`` (services' Services), ``node_inventory.py`` and
``kueue_admission.py``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from kubernetes import client
from kubernetes.client.rest import ApiException

from ...i18n import N_

from .api_calls import MANAGED_SELECTOR, api_words
from .cluster import ClusterReflector
from .config import KubernetesConfig
from .endpoints import Endpoints
from .errors import missing_permission
from .factory import PodFactory
from .pod_identity import SERVICE_LABEL
from .kernel_pods import KernelPods
from .kueue_admission import KueueAdmission
from .kueue_queues import KueueQueues
from .node_inventory import NodeInventory, node_readiness
from .nodes import pod_requests
from .pod_lifecycle import UNSEEN_GRACE_S
from .replicas import Replicas
from .telemetry import ExporterScraper, exporters_from_config

__all__ = ["MANAGED_SELECTOR", "UNSEEN_GRACE_S", "WORKLOAD_LABEL", "KubernetesBackend", "node_readiness"]

log = logging.getLogger(__name__)

WORKLOAD_LABEL = "hetero.jupyter.org/workload-id"


CONTAINERS_NOT_READ = N_("not measured on Kubernetes: a pod's CPU, memory, storage and network counters need the "
                          "cluster's metrics-server or the kubelet's cAdvisor, which this server does not read")


class KubernetesBackend(Replicas, KernelPods, Endpoints, NodeInventory, KueueAdmission):
    """Runs replicas as pods, placed by required node affinity to the engine's node; the reflector's
    caches answer every question the scheduler asks each tick."""

    name = "kubernetes"
    runs_here = False  # the image gives a pod its environment, the device plugin its devices
    # What is not measured of a pod here, and why (metric_names.MEASURED names; said once per attempt): the device
    # exporters give its devices' use, nothing reads its containers' CPU, memory, storage or network counters.
    unmeasured = {name: CONTAINERS_NOT_READ for name in (
        "cpu_seconds", "cpu_util", "memory_rss", "memory_rss_peak", "io_read_bytes", "io_write_bytes",
        "net_rx_bytes", "net_tx_bytes")}

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

    def close(self) -> None:
        self._closed.set()
        self.reflector.stop()
        if self.telemetry is not None:
            self.telemetry.stop()

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
                                refused or api_words(exc))
                    continue
                for item in json.loads(response.data).get("items", []):
                    name, labels = item["metadata"]["name"], item["metadata"].get("labels", {})
                    if SERVICE_LABEL in labels:
                        continue  # a service's name in the cluster: kept while it has replicas to run (expose)
                    if labels.get(WORKLOAD_LABEL) not in held:
                        self._delete(partial(delete, name, namespace), f"{kind} {namespace}/{name}")
                        orphans.append(f"{namespace}/{name}")
        return orphans
