"""A real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver, kube-scheduler, kube-controller-manager.

```python
with ControlPlane(binaries=Path(...), root=tmp_dir) as plane:     # binaries: scripts/kube-build.sh's directory
    core = kubernetes.client.CoreV1Api(plane.api_client())         # as system:masters
    plane.kubeconfig                                               # the admin's kubeconfig file
    plane.write_kubeconfig(path, token=...)                        # a bearer-token user's kubeconfig
```

Every certificate is made at the start (:mod:`tests.kube.pki`); every port is a free one of 127.0.0.1;
each component logs to ``root/<component>.log``, whose tail a failure to start shows. Nothing here runs
kubelets: nodes are kwok's (:class:`Kwok`) or :class:`tests.kube.real_kubelet.RealKubelet`'s.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.kube.nodes import KWOK_ANNOTATION
from tests.kube.pki import Pki

__all__ = ["ControlPlane", "ControlPlaneError", "Kwok", "free_port"]

# Pod and service ranges no real network of the machine uses; nothing routes them (no kubelet, no proxy).
SERVICE_CIDR = "10.96.0.0/16"
# The common name of the API server's front-proxy client certificate (aggregated APIs accept only it).
FRONT_PROXY = "front-proxy-client"
# The admission plugins the issue asks for and those a real cluster enables by default, in the API server's order.
ADMISSION_PLUGINS = ("NamespaceLifecycle,LimitRanger,ServiceAccount,PodSecurity,DefaultTolerationSeconds,"
                     "DefaultStorageClass,StorageObjectInUseProtection,PersistentVolumeClaimResize,"
                     "RuntimeClass,Priority,TaintNodesByCondition,MutatingAdmissionWebhook,"
                     "ValidatingAdmissionPolicy,ValidatingAdmissionWebhook,ResourceQuota,NodeRestriction")
# Seconds each component may take to answer its health check (the API server's first start includes
# its bootstrap of RBAC roles and priority levels into etcd).
START_TIMEOUT_S = 90.0


class ControlPlaneError(RuntimeError):
    """A component did not start or died; the message holds the tail of its log."""


def free_port() -> int:
    """A port of 127.0.0.1 that nothing listens on now (the component binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen
    log: Path

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM to the component's process group, SIGKILL after ``grace`` seconds."""
        if self.popen.poll() is not None:
            return
        try:
            os.killpg(self.popen.pid, signal.SIGTERM)
            self.popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
        except ProcessLookupError:
            pass


@dataclass
class ControlPlane:
    """etcd and the three control-plane components, started by :meth:`start` and stopped by :meth:`stop`."""

    binaries: Path
    root: Path
    etcd: str = field(default_factory=lambda: shutil.which("etcd") or "/usr/bin/etcd")
    # The node lifecycle controller marks a node whose heartbeats stop NotReady/Unknown after this long
    # (the default, 40 s, would make a lost-node test slow).
    node_monitor_grace_period: str = "20s"
    started_in: float | None = None  # seconds start() took, /readyz and every component's health included
    url: str = ""
    _processes: list[_Process] = field(default_factory=list)

    @property
    def kubeconfig(self) -> Path:
        """The admin's kubeconfig (user ``kubernetes-admin`` in group ``system:masters``)."""
        return self.root / "admin.kubeconfig"

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> ControlPlane:
        began = time.monotonic()
        self.root.mkdir(parents=True, exist_ok=True)
        self.pki = Pki.create(self.root / "pki")
        try:
            etcd_url = self._start_etcd()
            self._start_apiserver(etcd_url)
            self._write_client_kubeconfig(self.kubeconfig, "kubernetes-admin", "system:masters")
            self._start_scheduler()
            self._start_controller_manager()
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - began
        return self

    def stop(self) -> None:
        """Stops every component, the last started first (etcd last, so none loses its store while stopping)."""
        while self._processes:
            self._processes.pop().stop()

    def logs(self) -> str:
        """The tail of every component's log, for a failure message."""
        return "\n".join(f"--- {p.name} ({p.log}) ---\n{p.tail()}" for p in self._processes)

    def api_client(self, kubeconfig: Path | None = None):
        """A ``kubernetes`` ApiClient of ``kubeconfig`` (the admin's by default)."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(kubeconfig or self.kubeconfig))

    def write_kubeconfig(self, path: Path, *, user: str, token: str) -> Path:
        """A kubeconfig that reaches this API server as ``user`` with a bearer ``token``."""
        return self._write_kubeconfig(path, user, {"token": token})

    def node_kubeconfig(self, path: Path, node: str) -> Path:
        """A kubeconfig of the node ``node``'s kubelet (``system:node:<node>`` in ``system:nodes``), whom the Node
        authorizer and NodeRestriction judge."""
        return self._write_client_kubeconfig(path, f"system:node:{node}", "system:nodes")

    # --- components -------------------------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> _Process:
        log = self.root / f"{name}.log"
        with log.open("ab") as out:
            # A session of its own: stop() signals the component's whole group, never the test runner's.
            popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True, cwd=self.root)
        process = _Process(name, popen, log)
        self._processes.append(process)
        return process

    def _wait_healthy(self, process: _Process, url: str, context: ssl.SSLContext | None) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        last = "no answer yet"
        while time.monotonic() < deadline:
            if process.popen.poll() is not None:
                raise ControlPlaneError(f"{process.name} exited with {process.popen.returncode} before {url} "
                                        f"answered; its log:\n{process.tail()}")
            try:
                with urllib.request.urlopen(url, timeout=5, context=context) as answer:
                    if answer.status == 200:
                        return
                    last = f"HTTP {answer.status}"
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}: {exc.read()[:500].decode(errors='replace')}"
            except OSError as exc:
                last = f"{type(exc).__name__}: {exc}"
            time.sleep(0.2)
        raise ControlPlaneError(f"{process.name}: {url} did not answer 200 in {START_TIMEOUT_S:.0f} s "
                                f"(last: {last}); its log:\n{process.tail()}")

    def _start_etcd(self) -> str:
        client, peer = free_port(), free_port()
        client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
        process = self._spawn("etcd", [
            self.etcd, "--name=hetero-test", f"--data-dir={self.root / 'etcd'}",
            f"--listen-client-urls={client_url}", f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=hetero-test={peer_url}", "--log-level=warn", "--logger=zap",
        ])
        self._wait_healthy(process, f"{client_url}/health", None)
        return client_url

    def _start_apiserver(self, etcd_url: str) -> None:
        port = free_port()
        self.url = f"https://127.0.0.1:{port}"
        pki = self.pki
        # The front proxy's client certificate: the API server presents it to the aggregated APIs it proxies
        # (Kueue's visibility API), which trust the user it names in X-Remote-User only from that name.
        proxy_cert, proxy_key = pki.client(FRONT_PROXY)
        process = self._spawn("kube-apiserver", [
            str(self.binaries / "kube-apiserver"), f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}",
            f"--cert-dir={self.root / 'apiserver-certs'}",
            f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            "--authorization-mode=Node,RBAC", f"--enable-admission-plugins={ADMISSION_PLUGINS}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.service_account_pub}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            "--api-audiences=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--allow-privileged=false",
            # The `kubernetes` Service's endpoint would be 127.0.0.1, which Endpoints refuse (loopback): no pod
            # reaches this API server through it anyway, as no kube-proxy runs.
            "--endpoint-reconciler-type=none", "--profiling=false", "--v=1",
            f"--requestheader-client-ca-file={pki.ca_cert}", f"--requestheader-allowed-names={FRONT_PROXY}",
            "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={proxy_cert}", f"--proxy-client-key-file={proxy_key}",
        ])
        context = ssl.create_default_context(cafile=str(pki.ca_cert))
        self._wait_healthy(process, f"{self.url}/readyz", context)

    def _start_scheduler(self) -> None:
        kubeconfig = self._write_client_kubeconfig(self.root / "scheduler.kubeconfig", "system:kube-scheduler")
        port = free_port()
        process = self._spawn("kube-scheduler", [
            str(self.binaries / "kube-scheduler"), f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={port}", f"--cert-dir={self.root / 'scheduler-certs'}",
            "--leader-elect=false", "--v=1",
        ])
        self._wait_healthy(process, f"https://127.0.0.1:{port}/healthz", _self_signed())

    def _start_controller_manager(self) -> None:
        kubeconfig = self._write_client_kubeconfig(self.root / "controller-manager.kubeconfig",
                                                   "system:kube-controller-manager")
        port = free_port()
        pki = self.pki
        process = self._spawn("kube-controller-manager", [
            str(self.binaries / "kube-controller-manager"), f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={port}", f"--cert-dir={self.root / 'controller-certs'}",
            # Mints each namespace's kube-root-ca.crt ConfigMap and signs service-account tokens' secrets.
            f"--service-account-private-key-file={pki.service_account_key}", f"--root-ca-file={pki.ca_cert}",
            "--use-service-account-credentials=true",
            f"--cluster-signing-cert-file={pki.ca_cert}", f"--cluster-signing-key-file={pki.ca_key}",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--allocate-node-cidrs=false",
            f"--node-monitor-grace-period={self.node_monitor_grace_period}", "--node-monitor-period=2s",
            "--leader-elect=false", "--v=1",
        ])
        self._wait_healthy(process, f"https://127.0.0.1:{port}/healthz", _self_signed())

    # --- kubeconfigs ------------------------------------------------------------------------------------------

    def _write_client_kubeconfig(self, path: Path, user: str, group: str | None = None) -> Path:
        cert, key = self.pki.client(user, group)
        return self._write_kubeconfig(path, user, {"client-certificate": str(cert), "client-key": str(key)})

    def _write_kubeconfig(self, path: Path, user: str, credentials: dict) -> Path:
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "hetero-test",
            "clusters": [{"name": "hetero-test",
                          "cluster": {"server": self.url, "certificate-authority": str(self.pki.ca_cert)}}],
            "users": [{"name": user, "user": credentials}],
            "contexts": [{"name": "hetero-test", "context": {"cluster": "hetero-test", "user": user}}],
        }
        path.write_text(json.dumps(config, indent=2))  # JSON is YAML: every kubeconfig reader takes it
        path.chmod(0o600)
        return path


def _self_signed() -> ssl.SSLContext:
    """The scheduler and controller manager serve /healthz with a certificate they made themselves at start."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


@dataclass
class Kwok:
    """kwok over a control plane: it heartbeats the nodes annotated ``kwok.x-k8s.io/node=fake`` and runs the
    pods bound to them (Running and Ready at once; never a container, so no exit code or log)."""

    binary: Path
    plane: ControlPlane
    _process: _Process | None = None

    def start(self) -> Kwok:
        log = self.plane.root / "kwok.log"
        with log.open("ab") as out:
            popen = subprocess.Popen([
                str(self.binary), f"--kubeconfig={self.plane.kubeconfig}", "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
                # Leases, as a kubelet heartbeats: the node lifecycle controller reads them.
                "--node-lease-duration-seconds=40", f"--server-address=127.0.0.1:{free_port()}",
            ], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self._process = _Process("kwok", popen, log)
        return self  # whoever creates its nodes waits for them to be Ready (and shows tail() when they are not)

    def tail(self) -> str:
        return self._process.tail() if self._process else "(kwok not started)"

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()
            self._process = None
