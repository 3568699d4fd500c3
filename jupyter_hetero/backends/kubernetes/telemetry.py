"""Device use of our pods, scraped from the cluster's device exporters every interval, off the event loop.

    scraper = ExporterScraper([Exporter("dcgm", "http://{node_ip}:9400/metrics")], targets=backend.device_nodes,
                              interval_s=15, timeout_s=3)
    scraper.start()                                    # a daemon thread: one pass now, then every interval
    scraper.usage("hetero/hetero-job-7-a1-r0-ann", devices=2, node="dgx-01")
    # {"device_util_pct": 43.5, "device_memory_used_mib": 31732.0, "device_source": "exporter:dcgm"}, or {} (not
    # measured), or {"device_note": why not}

Each pass reads every endpoint that covers a node where our device pods run (at most ``timeout_s`` each, several
at once) and replaces what it knew from that endpoint: nothing is carried over from an earlier pass, so a pod
whose exporter stopped answering is unmeasured, never measured by old figures. An endpoint that fails (refused,
timed out, an HTTP error) is logged once when it starts failing and once when it answers again, and the pods it
covers carry a ``device_note`` saying why they are not measured.
"""

from __future__ import annotations

import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass

from .exporters import KINDS, DeviceReading, by_pod, parse

__all__ = ["Exporter", "ExporterScraper", "NodeTarget", "exporters_from_config"]

log = logging.getLogger(__name__)

# Exporter kinds by the prefix of the extended resources a pod asks for (the device plugin's vendor).
VENDOR_OF = {"dcgm": "nvidia.com/", "npu-exporter": "huawei.com/", "amd-device-metrics": "amd.com/"}
# A metrics page larger than this is not an exporter's (a node's DCGM page is some hundred KiB).
MAX_BODY = 32 * 1024 * 1024
# Endpoints read at once in a pass.
PARALLEL = 8


@dataclass(frozen=True)
class Exporter:
    """An exporter's Prometheus endpoint: one URL, or one per node when it names ``{node}`` or ``{node_ip}``."""

    kind: str
    url: str

    @property
    def per_node(self) -> bool:
        return "{node}" in self.url or "{node_ip}" in self.url


@dataclass(frozen=True)
class NodeTarget:
    """A node where our pods hold devices: its name, address, and the resource prefixes of those devices."""

    node: str
    ip: str
    vendors: frozenset[str]


def exporters_from_config(entries: Iterable[dict]) -> list[Exporter]:
    """``KubernetesConfig.exporters`` as Exporter records; ValueError naming the first bad entry."""
    exporters = []
    for number, entry in enumerate(entries, 1):
        kind, url = entry.get("kind"), entry.get("url")
        if kind not in KINDS:
            raise ValueError(f"exporter {number}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"exporter {number}: url must be an http(s) URL, not {url!r}")
        if set(entry) - {"kind", "url"}:
            raise ValueError(f"exporter {number}: unknown keys {sorted(set(entry) - {'kind', 'url'})}")
        exporters.append(Exporter(kind, url))
    return exporters


def _fetch(url: str, timeout_s: float) -> str:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - the platform team's URL
        body = response.read(MAX_BODY + 1)
    if len(body) > MAX_BODY:
        raise ValueError(f"more than {MAX_BODY // 1024 // 1024} MiB")
    return body.decode("utf-8", errors="replace")


class ExporterScraper:
    """The latest pass's readings per endpoint, and which endpoints failed and why."""

    def __init__(self, exporters: list[Exporter], *, targets: Callable[[], Iterable[NodeTarget]],
                 interval_s: float = 15.0, timeout_s: float = 3.0,
                 fetch: Callable[[str, float], str] = _fetch):
        self.exporters = exporters
        self.targets = targets
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.fetch = fetch
        self._lock = threading.Lock()
        self._pods: dict[str, dict[str, DeviceReading]] = {}  # the latest pass: pod key -> device -> reading
        self._covered: dict[str, tuple[str, frozenset[str] | None]] = {}  # url -> (kind, nodes; None: every node)
        self._kinds: dict[str, str] = {}  # pod key -> the kind of exporter that read it, the latest pass
        self.failing: dict[str, str] = {}  # url -> why it did not answer (logged once per outage)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(PARALLEL, thread_name_prefix="hetero-exporter")

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True, name="hetero-exporters")
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.scrape()
            except Exception:  # noqa: BLE001 - a bad pass must not end telemetry for good
                log.exception("jupyter-hetero: a pass over the device exporters failed")
            self._stop.wait(self.interval_s)

    def endpoints(self, targets: Iterable[NodeTarget]) -> dict[str, tuple[str, frozenset[str] | None]]:
        """The URLs to read for these nodes: a per-node endpoint for each node whose devices are its vendor's, a
        single one whenever any node has them. Each with its kind and the nodes it covers (None: all)."""
        targets = list(targets)
        urls: dict[str, tuple[str, frozenset[str] | None]] = {}
        for exporter in self.exporters:
            mine = [t for t in targets if VENDOR_OF[exporter.kind] in t.vendors]
            if not mine:
                continue
            if not exporter.per_node:
                urls[exporter.url] = (exporter.kind, None)
                continue
            for target in mine:
                url = exporter.url.replace("{node}", target.node).replace("{node_ip}", target.ip)
                kind, nodes = urls.get(url, (exporter.kind, frozenset()))
                urls[url] = (kind, None if nodes is None else nodes | {target.node})
        return urls

    def scrape(self) -> None:
        """One pass: read every endpoint now needed, at once, each within the timeout."""
        urls = self.endpoints(self.targets())
        futures = {url: self._pool.submit(self.fetch, url, self.timeout_s) for url in urls}
        wait(futures.values(), timeout=self.timeout_s + 1.0)
        pods: dict[str, dict[str, DeviceReading]] = {}
        kinds: dict[str, str] = {}  # pod key -> the kind of exporter that read its devices
        failing: dict[str, str] = {}
        for url, future in futures.items():
            kind = urls[url][0]
            if not future.done():
                future.cancel()
                failing[url] = f"no answer within {self.timeout_s:g} s"
                continue
            try:
                readings = parse(kind, future.result())
            except Exception as exc:  # noqa: BLE001 - refused, timed out, an HTTP error: why, in words
                failing[url] = _why(exc, self.timeout_s)
                continue
            for key, devices in by_pod(readings).items():
                pods.setdefault(key, {}).update(devices)
                kinds[key] = kind
        for url, why in failing.items():
            if url not in self.failing:
                log.warning("jupyter-hetero: device exporter %s (%s) did not answer: %s; the pods it covers are "
                            "not measured until it does", url, urls[url][0], why)
        for url in (self.failing.keys() - failing.keys()) & urls.keys():
            log.info("jupyter-hetero: device exporter %s answers again", url)
        with self._lock:
            self._pods, self._covered, self._kinds = pods, urls, kinds
            # An outage of an endpoint not read this pass is remembered: it is not logged again if it persists.
            self.failing = {**{url: why for url, why in self.failing.items() if url not in urls}, **failing}

    def usage(self, key: str, *, devices: int, node: str) -> dict:
        """A pod's devices as the last pass read them: mean utilisation (%) and memory used (MiB, where every
        device's was read). Empty when fewer of its devices than it holds were read (never guessed), with a
        ``device_note`` when an endpoint covering its node did not answer."""
        with self._lock:
            readings = list(self._pods.get(key, {}).values())
            kind = self._kinds.get(key)
            down = next((f"the {kind} exporter at {url} did not answer: {self.failing[url]}"
                         for url, (kind, nodes) in self._covered.items()
                         if url in self.failing and (nodes is None or node in nodes)), None)
        utils = [r.util_pct for r in readings if r.util_pct is not None]
        if devices <= 0 or len(utils) < devices:
            return {"device_note": down} if down else {}
        sample = {"device_util_pct": round(sum(utils) / len(utils), 1), "device_source": f"exporter:{kind}"}
        memory = [r.memory_mib for r in readings if r.memory_mib is not None]
        if len(memory) == len(readings):
            sample["device_memory_used_mib"] = round(sum(memory), 1)
        return sample


def _why(exc: BaseException, timeout_s: float) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, TimeoutError) or "timed out" in str(exc):
        return f"no answer within {timeout_s:g} s"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc) or type(exc).__name__
