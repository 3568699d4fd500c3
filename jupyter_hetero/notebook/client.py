"""A typed REST client for a running jupyter-hetero server; the CLI and the magics use it.

    client = HeteroClient.discover()            # env, then the Jupyter runtime dir
    job = client.submit(template="training", command=["python", "train.py"])
    client.workload(job["id"])["state"]
    for chunk in client.logs(job["id"], follow=True):
        print(chunk, end="")

The server is found, in order, from explicit ``url``/``token``; ``JUPYTER_HETERO_URL`` and
``JUPYTER_HETERO_TOKEN``; among the servers ``jupyter_server``'s ``list_running_servers`` finds whose runtime
file is the caller's own (never another user's, as a hub's service may be), the newest that answers the hetero
API, else the newest. Every refusal and failure to connect names the server's URL. In a hetero
kernel or job the server sets those two variables, and the token is the workload's own credential:
it reaches the hetero API as the workload's user (their own work only) until the workload ends.
Code inside a workload never falls back to the runtime directory, whose files hold the server's
own token.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["ApiError", "HeteroClient", "ServerNotFound", "Workload", "WorkloadFailed", "parse_after", "submit"]

API = "hetero/api/v1"


class ServerNotFound(RuntimeError):
    """No running server could be found or reached."""


class ApiError(RuntimeError):
    """The server refused a request; ``status``, ``field`` and ``reason`` say why."""

    def __init__(self, status: int, body: dict[str, Any], url: str = ""):
        self.status = status
        self.body = body
        self.field = body.get("field")
        self.reason = body.get("reason")
        self.url = url  # the server that answered: with a found server, the first thing to check
        super().__init__(f"{status}: {body.get('message') or body}" + (f" (from {url})" if url else ""))


# How long a running server has to answer whether it runs the hetero API (a local one answers at once).
PROBE_TIMEOUT_S = 2.0
# How long one call waits out 429s (the user's submission rate) before it gives up with the server's answer.
RATE_WAIT_S = 300.0


def _retry_after(refusal: urllib.error.HTTPError) -> float | None:
    """The seconds a 429 asks the client to wait (``Retry-After`` in seconds), or None when it names none."""
    try:
        return max(0.0, float(refusal.headers.get("Retry-After", "")))
    except ValueError:
        return None


def _live_servers() -> list[dict[str, Any]]:
    """The running Jupyter servers in the runtime directory, newest first, as jupyter_server lists them; each with
    ``runtime_file_uid``, the user who owns its runtime file (the server's user)."""
    from jupyter_core.paths import jupyter_runtime_dir  # noqa: PLC0415 - only a plain notebook needs these
    from jupyter_server.serverapp import list_running_servers  # noqa: PLC0415

    runtime_dir = Path(jupyter_runtime_dir())

    # The listing carries no start time or owner: its runtime file, written by the server when it starts, does.
    files: dict[Any, os.stat_result] = {}
    for path in runtime_dir.glob("jpserver-*.json"):
        try:
            files[json.loads(path.read_text(encoding="utf-8")).get("pid")] = path.stat()
        except (OSError, ValueError, AttributeError):
            continue  # gone, or not a server's file
    found = [(files[info["pid"]].st_mtime, {**info, "runtime_file_uid": files[info["pid"]].st_uid})
             for info in list_running_servers(str(runtime_dir)) if info.get("pid") in files]
    return [info for _mtime, info in sorted(found, key=lambda pair: pair[0], reverse=True)]


def _runs_hetero(url: str, token: str) -> bool:
    """Whether the server at ``url`` answers the hetero API's version with ``token``."""
    request = urllib.request.Request(urllib.parse.urljoin(url.rstrip("/") + "/", f"{API}/version"))
    if token:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as response:  # noqa: S310 - a local server
            return response.status == 200 and "api" in json.loads(response.read() or b"{}")
    except (OSError, ValueError):  # refused, not there (404), or not JSON: not a hetero server for us
        return False


def _choose(servers: list[dict[str, Any]]) -> dict[str, Any]:
    """The server to use among ``servers`` (newest first): the caller's own only; the newest that runs the hetero
    API, else the newest."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    own = [info for info in servers if uid is None or info["runtime_file_uid"] == uid]
    if not own:
        raise ServerNotFound(
            "the running Jupyter servers found belong to other users (" + ", ".join(info["url"] for info in servers)
            + "): start your own, or pass --url and --token (or set JUPYTER_HETERO_URL and JUPYTER_HETERO_TOKEN)")
    return next((info for info in own if _runs_hetero(info["url"], info.get("token", ""))), own[0])


class HeteroClient:
    def __init__(self, url: str, token: str = "", timeout: float = 30.0, rate_wait: float = RATE_WAIT_S,
                 sleep: Callable[[float], None] = time.sleep):
        self.url = url.rstrip("/") + "/"
        self.token = token
        self.timeout = timeout
        self.rate_wait = rate_wait  # seconds one call may spend waiting out the server's submission rate
        self._sleep = sleep

    @classmethod
    def discover(cls, url: str | None = None, token: str | None = None) -> HeteroClient:
        url = url or os.environ.get("JUPYTER_HETERO_URL")
        token = token if token is not None else os.environ.get("JUPYTER_HETERO_TOKEN")
        if url:
            return cls(url, token or "")
        if os.environ.get("HETERO_WORKLOAD_ID"):
            raise ServerNotFound(
                "this kernel or job was started without JUPYTER_HETERO_URL: pass url and token (the workload's "
                "credential is in JUPYTER_HETERO_TOKEN), or use %hetero_connect URL TOKEN"
            )
        servers = _live_servers()
        if not servers:
            raise ServerNotFound(
                "no running Jupyter server found: start one (`make demo` or `jupyter lab`), "
                "or pass --url and --token (or set JUPYTER_HETERO_URL and JUPYTER_HETERO_TOKEN)"
            )
        chosen = _choose(servers)
        return cls(chosen["url"], token or chosen.get("token", ""))

    # -- transport -----------------------------------------------------------------------------

    def _open(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None,
              timeout: float | None = -1.0):
        query = {k: ("true" if v is True else "false" if v is False else v) for k, v in (params or {}).items()
                 if v is not None}
        target = urllib.parse.urljoin(self.url, f"{API}/{path}")
        if query:
            target += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(target, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"token {self.token}")
        waited = 0.0
        while True:
            try:
                return urllib.request.urlopen(  # noqa: S310 - the server's own URL
                    request, timeout=self.timeout if timeout == -1.0 else timeout)
            except urllib.error.HTTPError as exc:
                retry_after = _retry_after(exc) if exc.code == 429 else None
                if retry_after is not None and waited + retry_after <= self.rate_wait:
                    # Refused before anything was stored (the user's submission rate): sent again once allowed,
                    # as a loop of `jupyter hetero submit` would want.
                    exc.close()
                    self._sleep(retry_after)
                    waited += retry_after
                    continue
                try:
                    payload = json.loads(exc.read() or b"{}")
                except ValueError:
                    payload = {"message": exc.reason}
                raise ApiError(exc.code, payload, self.url) from None
            except urllib.error.URLError as exc:
                raise ServerNotFound(f"cannot reach the server at {self.url}: {exc.reason}") from None

    def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        with self._open(method, path, body, params) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def text(self, path: str, **params: Any) -> str:
        """A GET whose answer is text (a log, an HTML report), as it comes."""
        with self._open("GET", path, None, params) as response:
            return response.read().decode("utf-8")

    # -- resources -------------------------------------------------------------------------------

    def version(self) -> dict:
        return self.request("GET", "version")

    def templates(self, **filters: Any) -> list[dict]:
        return self.request("GET", "templates", **filters)

    def template(self, name: str) -> dict:
        return self.request("GET", f"templates/{name}")

    def queues(self) -> list[dict]:
        return self.request("GET", "queues")

    def tenant(self) -> dict:
        return self.request("GET", "tenants/me")

    def nodes(self, **filters: Any) -> list[dict]:
        return self.request("GET", "nodes", **filters)

    def submit(self, **body: Any) -> dict:
        body.setdefault("kind", "job")
        return self.request("POST", "workloads", body)

    def workloads(self, **filters: Any) -> list[dict]:
        return self.request("GET", "workloads", **filters)

    def workload(self, workload_id: int, lang: str | None = None) -> dict:
        return self.request("GET", f"workloads/{workload_id}", lang=lang)

    def cancel(self, workload_id: int, *, array: bool = False) -> dict:
        """Cancel a workload; with ``array``, every unfinished task of the array it is one of."""
        return self.request("DELETE", f"workloads/{workload_id}", array=array or None)

    def events(self, workload_id: int) -> list[dict]:
        return self.request("GET", f"workloads/{workload_id}/events")

    def explain(self, workload_id: int, lang: str = "en") -> dict:
        return self.request("GET", f"workloads/{workload_id}/explain", lang=lang)

    def preview(self, **body: Any) -> dict:
        return self.request("POST", "previews", body)

    def preview_preemption(self, workload_id: int) -> dict:
        return self.request("POST", f"workloads/{workload_id}/preempt", dry_run=True)

    # -- online services -------------------------------------------------------------------

    def services(self) -> list[dict]:
        return self.request("GET", "services")

    def service(self, name: str) -> dict:
        return self.request("GET", f"services/{urllib.parse.quote(name, safe='')}")

    def serve(self, **body: Any) -> dict:
        return self.request("POST", "services", body)

    def scale(self, name: str, replicas: int) -> dict:
        return self.request("PATCH", f"services/{urllib.parse.quote(name, safe='')}", {"replicas": replicas})

    def roll_out(self, name: str, **changes: Any) -> dict:
        return self.request("POST", f"services/{urllib.parse.quote(name, safe='')}/rollouts", changes)

    def roll_back(self, name: str, revision: int | None = None) -> dict:
        return self.request("POST", f"services/{urllib.parse.quote(name, safe='')}/rollback",
                            {"revision": revision} if revision else {})

    def delete_service(self, name: str) -> dict:
        return self.request("DELETE", f"services/{urllib.parse.quote(name, safe='')}")

    def logs(self, workload_id: int, attempt: int | None = None, follow: bool = False,
             tail: int | None = None) -> Iterator[str]:
        """The log as text chunks; with ``follow`` they keep coming until the attempt ends."""
        params = {"attempt": attempt, "follow": follow or None, "tail": tail}
        # A followed log may stay silent for long stretches: no read timeout then.
        with self._open("GET", f"workloads/{workload_id}/logs", params=params,
                        timeout=None if follow else -1.0) as response:
            while True:
                chunk = response.read1(65536) if hasattr(response, "read1") else response.read(65536)
                if not chunk:
                    return
                yield chunk.decode("utf-8", errors="replace")


FINAL_STATES = ("succeeded", "failed", "cancelled", "lost")
# Waiting, but no node of the inventory could ever hold it; queued again when the inventory changes.
INADMISSIBLE = "inadmissible"


class WorkloadFailed(RuntimeError):
    """The workload ended without succeeding; ``workload`` is its last description."""

    def __init__(self, workload: dict):
        self.workload = workload
        super().__init__(f"workload {workload['id']} {workload['state']}: {workload.get('reason') or ''}".rstrip(": "))


class Workload:
    """A handle on one submitted workload.

        job = submit(template="training", code="...", pull=["metrics"])
        job.status()["state"]; job.wait(); job.result()["metrics"]; print(job.logs())
    """

    def __init__(self, client: HeteroClient, workload_id: int, pull: list[str] | None = None):
        self.client = client
        self.id = workload_id
        self.pull = list(pull or [])

    def __repr__(self) -> str:
        return f"<Workload {self.id}>"

    def status(self, lang: str | None = None) -> dict:
        return self.client.workload(self.id, lang=lang)

    def wait(self, timeout: float | None = None, poll_s: float = 1.0, on_change=None) -> dict:
        """Block until the workload ends, or turns out inadmissible (no node of the inventory could ever
        hold it, so waiting would not help); ``on_change(description)`` sees every new state."""
        import time  # noqa: PLC0415

        deadline = None if timeout is None else time.monotonic() + timeout
        seen = None
        while True:
            description = self.status()
            marker = (description["state"], description.get("position"), description.get("attempt_count"))
            if on_change is not None and marker != seen:
                on_change(description)
                seen = marker
            if description["state"] in (*FINAL_STATES, INADMISSIBLE):
                return description
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"workload {self.id} is still {description['state']} after {timeout} s")
            time.sleep(poll_s)

    def logs(self, attempt: int | None = None, tail: int | None = None) -> str:
        return "".join(self.client.logs(self.id, attempt=attempt, tail=tail))

    def follow(self):
        """The log, chunk by chunk, until the attempt ends."""
        return self.client.logs(self.id, follow=True)

    def cancel(self) -> dict:
        return self.client.cancel(self.id)

    def explain(self, lang: str = "en") -> dict:
        return self.client.explain(self.id, lang=lang)

    def file(self, path: str, attempt: int | None = None) -> bytes:
        with self.client._open("GET", f"workloads/{self.id}/files",
                               params={"path": path, "attempt": attempt}) as response:
            return response.read()

    def result(self) -> dict[str, Any]:
        """The pulled values of a succeeded workload (``{}`` when nothing was pulled)."""
        from .cellcode import PULL_FILE, read_pulled  # noqa: PLC0415

        description = self.status()
        if description["state"] != "succeeded":
            raise WorkloadFailed(description)
        if not self.pull:
            return {}
        return read_pulled(self.file(f"outputs/{PULL_FILE}"))


def parse_after(text: str) -> dict[str, Any]:
    """``ID[:ok|:any|:failed]``, as ``--after`` takes it, as the API's ``after`` entry:

        parse_after("12:any")   # {"workload": 12, "condition": "any"}
    """
    workload, _, condition = text.strip().partition(":")
    if not workload.isdigit() or int(workload) < 1 or condition not in ("", "ok", "any", "failed"):
        raise ValueError(f"{text!r} is not ID, ID:ok, ID:any or ID:failed")
    return {"workload": int(workload), "condition": condition or "ok"}


def submit(*, template: str, code: str | None = None, command: list[str] | None = None,
           script: str | None = None, args: list[str] | None = None, notebook: str | None = None,
           notebook_parameters: dict | None = None, push: dict[str, Any] | None = None,
           pull: list[str] | None = None, files: dict[str, bytes] | None = None,
           client: HeteroClient | None = None, **fields: Any) -> Workload:
    """Submit a job and return its handle; ``push``/``pull``/``files`` apply to ``code``.

        job = submit(template="data-preprocessing", code="total = sum(xs)", push={"xs": [1, 2]}, pull=["total"])
        job.wait(); job.result()["total"]   # 3
    """
    from .cellcode import job_code  # noqa: PLC0415

    client = client or HeteroClient.discover()
    if code is not None:
        fields["code"] = job_code(code, push=push, pull=pull, files=files) if (push or pull or files) else code
    elif command is not None:
        fields["command"] = command
    elif script is not None:
        fields["script"] = {"path": script, "args": list(args or [])}
    elif notebook is not None:
        fields["notebook"] = {"path": notebook, "parameters": dict(notebook_parameters or {})}
    created = client.submit(template=template, **{k: v for k, v in fields.items() if v is not None})
    return Workload(client, created["id"], pull=pull)
