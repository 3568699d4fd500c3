"""A DCGM exporter for the fake cluster: recorded DCGM output whose pod labels are rewritten to the GPU pods the
fake API server has on each node, served on 127.0.0.1 at ``/<node>/metrics``.

```python
exporter = FakeDcgmExporter(kube_api).start()
c.KubernetesConfig.exporters = [{"kind": "dcgm", "url": exporter.url_template}]   # http://127.0.0.1:P/{node}/metrics
exporter.utilisation = lambda pod: 0.0          # what every GPU of a pod reads (default 60 %)
exporter.failure = "500"                        # or "slow": answers after exporter.delay_s
```

Like a real exporter in Kubernetes mode, it names the pod holding each GPU (here: the pod's ``nvidia.com/gpu``
limit, one GPU per unit, on the node it is bound to) and also reports a GPU no pod holds.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.kube.apiserver import FakeApiServer

__all__ = ["FakeDcgmExporter"]

RECORDED = Path(__file__).parents[1] / "data" / "exporters" / "dcgm" / "pr-432-gke-a100-mps.txt"


def _templates() -> dict[str, str]:
    """The recorded GPU_UTIL and FB_USED series of the first pod, by family: the lines every GPU is written as."""
    lines = RECORDED.read_text(encoding="utf-8").splitlines()
    return {family: next(line for line in lines if line.startswith(family + "{"))
            for family in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED")}


def _series(template: str, *, uuid: str, gpu: int, namespace: str, pod: str, value: float) -> str:
    labels, _old = template.rsplit(" ", 1)
    labels = re.sub(r'UUID="[^"]*"', f'UUID="{uuid}"', labels)
    labels = re.sub(r'gpu="[^"]*"', f'gpu="{gpu}"', labels)
    labels = re.sub(r'device="[^"]*"', f'device="nvidia{gpu}"', labels)
    labels = re.sub(r'namespace="[^"]*"', f'namespace="{namespace}"', labels)
    labels = re.sub(r'\bpod="[^"]*"', f'pod="{pod}"', labels)
    return f"{labels} {value:g}"


class FakeDcgmExporter:
    def __init__(self, api: FakeApiServer) -> None:
        self.api = api
        self.utilisation: Callable[[dict], float] = lambda pod: 60.0
        self.memory_mib = 15866.0
        self.failure: str | None = None  # "500" | "slow"
        self.delay_s = 5.0
        self.requests: list[str] = []
        self._templates = _templates()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="fake-dcgm-exporter")

    @property
    def url_template(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/{{node}}/metrics"

    def start(self) -> FakeDcgmExporter:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def page(self, node: str) -> str:
        """The node's metrics page as the exporter would serve it now."""
        gpus: list[tuple[str, str, float]] = []  # (namespace, pod, util) per GPU held
        for pod in self.api.list("Pod"):
            if pod["spec"].get("nodeName") != node or pod.get("status", {}).get("phase") != "Running":
                continue
            held = sum(int(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0))
                       for c in pod["spec"]["containers"])
            util = self.utilisation(pod)
            gpus += [(pod["metadata"]["namespace"], pod["metadata"]["name"], util)] * held
        gpus.append(("", "", 0.0))  # a GPU no pod holds
        lines = []
        for family, template in self._templates.items():
            lines.append(f"# TYPE {family} gauge")
            for index, (namespace, pod, util) in enumerate(gpus):
                value = util if family == "DCGM_FI_DEV_GPU_UTIL" else (self.memory_mib if pod else 0.0)
                lines.append(_series(template, uuid=f"GPU-{node}-{index}", gpu=index, namespace=namespace, pod=pod,
                                     value=value))
        return "\n".join(lines) + "\n"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                exporter.requests.append(self.path)
                match = re.fullmatch(r"/([^/]+)/metrics", self.path)
                if exporter.failure == "500" or match is None:
                    self.send_error(500 if match else 404)
                    return
                if exporter.failure == "slow":
                    time.sleep(exporter.delay_s)
                body = exporter.page(match.group(1)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        return Handler
