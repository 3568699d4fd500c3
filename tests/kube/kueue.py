"""Kueue's own controller (v0.17.0, scripts/kube-build.sh's ``kueue``) over a real control plane.

```python
with Kueue(binary=binaries / "kueue", plane=plane, module=KUEUE_MODULE) as kueue:
    kueue.managed_namespace("hetero-default")     # a namespace whose pods Kueue's pod integration manages
    kueue.custom.create_cluster_custom_object(...) # a CustomObjectsApi as the admin
```

What it sets up, and why:

- **CRDs** from Kueue's Go module (``config/components/crd/bases``), as the release's manifests install them.
- **Webhooks, served for real.** Kueue's pod integration *is* its mutating webhook: the webhook adds the
  ``kueue.x-k8s.io/admission`` scheduling gate and the ``kueue.x-k8s.io/managed`` label that its pod
  controller watches, so running without webhooks would test a Kueue that never gates a pod. Kueue serves
  them on 127.0.0.1 and manages their certificate itself (``internalCertManagement``, its default: it
  makes a CA and a certificate for ``kueue-webhook-service.kueue-system.svc`` and writes the CA into the
  webhook configurations and the CRDs' conversion webhooks, as in any install; with it off, v0.17 insists
  on a metrics certificate at the fixed path /etc/kueue/metrics/certs). The API server reaches a
  webhook's Service through its ClusterIP, which needs a kube-proxy; a Service of type ``ExternalName``
  is resolved by the API server itself to ``externalName:port``, so ``kueue-webhook-service`` is an
  ``ExternalName`` of 127.0.0.1 and every webhook reference names Kueue's port (TLS still verifies the
  name ``kueue-webhook-service.kueue-system.svc``, which the API server sends for a Service reference).
  The webhook configurations are the module's (``config/components/webhook/manifests.yaml``) with that
  reference; only Kueue's own kinds and pods are kept: the other frameworks are not enabled, so their
  paths would answer 404 and, with ``failurePolicy: Fail``, refuse every Deployment and Job of the other
  tests. The pod webhooks get a ``namespaceSelector`` on :data:`MANAGED_LABEL`, so no other test's pod
  ever waits on Kueue. The CRDs get the module's conversion patches (``config/components/crd/patches``)
  for the kinds whose conversion Kueue's certificate manager serves, so ``v1beta1`` works too.
- **Configuration**: the ``pod`` framework alone, ``managedJobsNamespaceSelector`` on the same label,
  leader election off, health and webhook ports free ones of 127.0.0.1, metrics off, certificates under the
  control plane's directory (never a path another test process shares).
- **The visibility API, served for real.** Kueue's pending-workloads API (``VisibilityOnDemand``, on by default)
  is an aggregated API: the APIService ``v1beta2.visibility.kueue.x-k8s.io`` names a Service, which is again an
  ``ExternalName`` of 127.0.0.1, and the API server proxies to Kueue's visibility server there with its front-proxy
  client certificate (:mod:`tests.kube.control_plane` starts it with one); Kueue authenticates and authorises each
  caller through the API server (TokenReview, SubjectAccessReview), so RBAC decides who reads it, as on a cluster.
  Its port is a free one (the flag ``--visibility-server-port``). Kueue v0.17 keeps that server's self-signed
  certificate in ``/visibility``, a path its code fixes: Kueue runs in a mount namespace of its own
  (``unshare --mount``) where a directory of this control plane is mounted there, so no two test processes share
  it (an empty ``/visibility`` is left on the machine as the mount point; making it needs root, as the tests run).
- Kueue runs with the admin's kubeconfig (``system:masters``), as its own ClusterRole would let it do
  what it does; RBAC of Kueue itself is not what these tests are about.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.kube.control_plane import ControlPlane, ControlPlaneError, _Process, free_port

__all__ = ["KUEUE_MODULE", "MANAGED_LABEL", "Kueue"]

KUEUE_VERSION = "v0.17.0"
KUEUE_MODULE = Path(os.environ.get("GOMODCACHE", "/root/go/pkg/mod")) / f"sigs.k8s.io/kueue@{KUEUE_VERSION}"
# The label of namespaces whose pods Kueue manages (and whose pods its webhooks see at all).
MANAGED_LABEL = "hetero.jupyter.org/kueue-test"
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
START_TIMEOUT_S = 60.0
_WEBHOOK_GROUPS = {"kueue.x-k8s.io", ""}  # Kueue's own kinds, and core (pods)
_VISIBILITY_SERVICE = "visibility-server"  # the name Kueue's manifests give it
# Where Kueue v0.17's visibility server keeps its certificate (pkg/visibility/server.go's certDir, not configurable).
VISIBILITY_CERT_DIR = "/visibility"
_SERVICE = {"namespace": "kueue-system", "name": "kueue-webhook-service"}  # Kueue's defaults, which its certificate names
# The CRDs whose conversion webhook Kueue's certificate manager fills in (pkg/util/cert/cert.go); the others
# stay without one, as a CRD with a webhook but no CA would refuse every v1beta1 request.
_CONVERTED = {"localqueues", "clusterqueues", "workloads", "cohorts", "multikueueclusters"}


@dataclass
class Kueue:
    """Kueue's controller manager over ``plane``, started by :meth:`start`, stopped by :meth:`stop`."""

    binary: Path
    plane: ControlPlane
    module: Path = KUEUE_MODULE
    webhook_port: int = 0
    visibility_port: int = 0
    _process: _Process | None = None
    _created: list[tuple[str, str]] = field(default_factory=list)

    def __enter__(self) -> Kueue:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def custom(self):
        from kubernetes import client

        return client.CustomObjectsApi(self.plane.api_client())

    def start(self) -> Kueue:
        from kubernetes import client, utils

        if not (self.module / "config" / "components" / "crd" / "bases").is_dir():
            raise ControlPlaneError(f"Kueue's module is not at {self.module}: run "
                                    f"`go mod download -json sigs.k8s.io/kueue@{KUEUE_VERSION}`")
        admin = self.plane.api_client()
        core = client.CoreV1Api(admin)
        self.webhook_port = free_port()
        core.create_namespace({"metadata": {"name": _SERVICE["namespace"]}})
        core.create_namespaced_service(_SERVICE["namespace"], {
            "metadata": {"name": _SERVICE["name"]},
            "spec": {"type": "ExternalName", "externalName": "127.0.0.1",
                     "ports": [{"port": self.webhook_port, "name": "https"}]}})
        # The empty Secret the release's manifests ship: Kueue's certificate manager fills it, never creates it.
        core.create_namespaced_secret(_SERVICE["namespace"], {"metadata": {"name": "kueue-webhook-server-cert"}})
        crds = self.module / "config" / "components" / "crd"
        for path in sorted((crds / "bases").glob("*.yaml")):
            crd = yaml.safe_load(path.read_text())
            if crd["spec"]["names"]["plural"] in _CONVERTED:
                patch = yaml.safe_load((crds / "patches" / f"webhook_in_{crd['spec']['names']['plural']}.yaml").read_text())
                crd["spec"]["conversion"] = patch["spec"]["conversion"]
                crd["spec"]["conversion"]["webhook"]["clientConfig"] = {"service": self._reference("/convert")}
            utils.create_from_dict(admin, crd)
        self._wait_crds_established()
        root = self.plane.root / "kueue"
        certs = root / "certs"
        certs.mkdir(parents=True, exist_ok=True)
        health = free_port()
        config = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "namespace": "kueue-system",
            "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
            "metrics": {"bindAddress": "0"},  # "0": controller-runtime serves no metrics
            "webhook": {"host": "127.0.0.1", "port": self.webhook_port, "certDir": str(certs)},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": True, "webhookServiceName": _SERVICE["name"]},
            "managedJobsNamespaceSelector": {"matchLabels": {MANAGED_LABEL: "true"}},
            "integrations": {"frameworks": ["pod"]},
            "visibilityServer": {"bindAddress": "127.0.0.1"},
        }
        config_path = root / "config.yaml"
        config_path.write_text(json.dumps(config, indent=2))
        self._register_webhooks()
        self.visibility_port = free_port()
        self._register_visibility()
        visibility = root / "visibility"
        visibility.mkdir()
        Path(VISIBILITY_CERT_DIR).mkdir(exist_ok=True)  # the mount point: Kueue's certificates go to `visibility`
        log = self.plane.root / "kueue.log"
        env = {**os.environ, "KUBECONFIG": str(self.plane.kubeconfig)}
        command = [str(self.binary), f"--config={config_path}", f"--kubeconfig={self.plane.kubeconfig}",
                   f"--visibility-server-port={self.visibility_port}", "--zap-log-level=2"]
        with log.open("ab") as out:
            popen = subprocess.Popen(
                ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                 f'mount --bind "$1" {VISIBILITY_CERT_DIR} && shift && exec "$@"', "kueue", str(visibility), *command],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env,
                cwd=root)
        self._process = _Process("kueue", popen, log)
        try:
            self._mount_certificate(certs)
            self.plane._wait_healthy(self._process, f"http://127.0.0.1:{health}/readyz", None)
            self._wait_webhooks_answer()
            self._wait_visibility_available()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()
            self._process = None
        # Kueue down, its webhooks (failurePolicy Fail) would refuse what they cover: take them away with it.
        from kubernetes import client

        try:
            api = client.AdmissionregistrationV1Api(self.plane.api_client())
            api.delete_mutating_webhook_configuration("kueue-mutating-webhook-configuration")
            api.delete_validating_webhook_configuration("kueue-validating-webhook-configuration")
        except Exception:  # the control plane may be stopping too; nothing is left to protect then
            pass

    def tail(self) -> str:
        return self._process.tail(80) if self._process else "(kueue not started)"

    def managed_namespace(self, name: str) -> str:
        """Creates namespace ``name`` labelled so that Kueue's pod integration manages its pods."""
        from kubernetes import client

        core = client.CoreV1Api(self.plane.api_client())
        core.create_namespace({"metadata": {"name": name, "labels": {MANAGED_LABEL: "true"}}})
        deadline = time.monotonic() + 30
        # As on any cluster just after a namespace: pods are refused until its default ServiceAccount exists.
        while not core.list_namespaced_service_account(name, field_selector="metadata.name=default").items:
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"namespace {name} got no default ServiceAccount in 30 s")
            time.sleep(0.1)
        return name

    # --- setup ------------------------------------------------------------------------------------------------

    def _wait_crds_established(self) -> None:
        from kubernetes import client

        api = client.ApiextensionsV1Api(self.plane.api_client())
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            crds = [c for c in api.list_custom_resource_definition().items if c.spec.group == GROUP]
            if crds and all(any(cond.type == "Established" and cond.status == "True"
                                for cond in c.status.conditions or ()) for c in crds):
                return
            if time.monotonic() > deadline:
                raise ControlPlaneError("Kueue's CRDs were not Established in time")
            time.sleep(0.2)

    def _register_webhooks(self) -> None:
        from kubernetes import client

        manifests = self.module / "config" / "components" / "webhook" / "manifests.yaml"
        api = client.AdmissionregistrationV1Api(self.plane.api_client())
        for document in yaml.safe_load_all(manifests.read_text()):
            kept = []
            for webhook in document["webhooks"]:
                if not all(group in _WEBHOOK_GROUPS for rule in webhook["rules"] for group in rule["apiGroups"]):
                    continue
                webhook = copy.deepcopy(webhook)
                path = webhook["clientConfig"]["service"]["path"]
                webhook["clientConfig"] = {"service": self._reference(path)}  # Kueue adds caBundle
                if any(rule["apiGroups"] == [""] for rule in webhook["rules"]):
                    webhook["namespaceSelector"] = {"matchLabels": {MANAGED_LABEL: "true"}}
                kept.append(webhook)
            # The names Kueue's certificate manager writes its CA into.
            kind = "mutating" if document["kind"] == "MutatingWebhookConfiguration" else "validating"
            body = {"metadata": {"name": f"kueue-{kind}-webhook-configuration"}, "webhooks": kept}
            if document["kind"] == "MutatingWebhookConfiguration":
                api.create_mutating_webhook_configuration(body)
            else:
                api.create_validating_webhook_configuration(body)

    def _mount_certificate(self, certs: Path) -> None:
        """Writes the webhook Secret Kueue fills into its certDir, as a kubelet's Secret volume would: Kueue's
        certificate manager writes only the Secret and waits for the files to appear (and no kubelet runs)."""
        from kubernetes import client

        core = client.CoreV1Api(self.plane.api_client())
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            data = core.read_namespaced_secret("kueue-webhook-server-cert", _SERVICE["namespace"]).data or {}
            if {"ca.crt", "tls.crt", "tls.key"} <= set(data):
                for name in ("ca.crt", "tls.crt", "tls.key"):
                    (certs / name).write_bytes(base64.b64decode(data[name]))
                return
            if self._process.popen.poll() is not None or time.monotonic() > deadline:
                raise ControlPlaneError(f"Kueue wrote no webhook certificate into its Secret; its log:\n{self.tail()}")
            time.sleep(0.2)

    def _register_visibility(self) -> None:
        """The APIService of Kueue's visibility API, behind an ExternalName Service of 127.0.0.1 on its port."""
        from kubernetes import client

        core = client.CoreV1Api(self.plane.api_client())
        core.create_namespaced_service(_SERVICE["namespace"], {
            "metadata": {"name": _VISIBILITY_SERVICE},
            "spec": {"type": "ExternalName", "externalName": "127.0.0.1",
                     "ports": [{"port": self.visibility_port, "name": "https"}]}})
        manifest = self.module / "config" / "components" / "visibility" / "apiservice_v1beta2.yaml"
        service = yaml.safe_load(manifest.read_text())
        service["spec"]["service"] = {"namespace": _SERVICE["namespace"], "name": _VISIBILITY_SERVICE,
                                      "port": self.visibility_port}
        client.ApiregistrationV1Api(self.plane.api_client()).create_api_service(service)

    def _wait_visibility_available(self) -> None:
        from kubernetes import client

        api = client.ApiregistrationV1Api(self.plane.api_client())
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            status = api.read_api_service(f"{VERSION}.visibility.{GROUP}").status
            available = next((c for c in status.conditions or () if c.type == "Available"), None)
            if available is not None and available.status == "True":
                return
            if self._process.popen.poll() is not None or time.monotonic() > deadline:
                raise ControlPlaneError(f"Kueue's visibility API did not become Available "
                                        f"({available and available.message}); its log:\n{self.tail()}")
            time.sleep(0.2)

    def _reference(self, path: str) -> dict:
        return {**_SERVICE, "path": path, "port": self.webhook_port}

    def _wait_webhooks_answer(self) -> None:
        """Until Kueue's webhooks admit a ResourceFlavor (readyz can answer before the API server reaches them)."""
        from kubernetes.client.exceptions import ApiException

        probe = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceFlavor",
                 "metadata": {"name": "hetero-test-probe"}, "spec": {}}
        deadline = time.monotonic() + START_TIMEOUT_S
        last = ""
        while time.monotonic() < deadline:
            try:
                self.custom.create_cluster_custom_object(GROUP, VERSION, "resourceflavors", probe)
                self.custom.delete_cluster_custom_object(GROUP, VERSION, "resourceflavors", "hetero-test-probe")
                return
            except ApiException as exc:
                last = f"{exc.status}: {exc.body}"
            time.sleep(0.3)
        raise ControlPlaneError(f"Kueue's webhooks did not answer in {START_TIMEOUT_S:.0f} s (last: {last}); "
                                f"its log:\n{self.tail()}")
