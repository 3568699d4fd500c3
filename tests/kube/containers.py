"""What the local kubelet makes of a pod's first container: the command line, env and volumes on this
machine, and the container status shapes it reports.

```python
launch = materialise(pod, secrets=lookup, pod_dir=root / "job-1", claims_dir=root / "claims")
subprocess.Popen(launch.command, env=launch.env, cwd=launch.cwd)
```
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NODE_IP", "ConfigError", "Launch", "container_status", "materialise", "pod_conditions", "pod_ip"]

NODE_IP = "127.0.0.1"  # every node is this machine


def pod_ip(number: int) -> str:
    """The ``number``-th pod's own address: Linux routes all of 127.0.0.0/8 to the loopback device, so each pod
    listens on an address of its own (as in its own network namespace) and two may use the same port."""
    return f"127.42.{number // 250 % 250}.{number % 250 + 1}"

_PYTHONS = ("python", "python3")


class ConfigError(Exception):
    """The container cannot be created yet: ``reason`` is its waiting reason, ``event`` the Warning to record."""

    def __init__(self, reason: str, event_reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.event_reason, self.message = reason, event_reason, message


@dataclass(frozen=True)
class Launch:
    """A container made local: run ``command`` with ``env`` in ``cwd``."""

    command: list[str]
    env: dict[str, str]
    cwd: Path


def _field(pod: dict, path: str, ip: str) -> str:
    spec, metadata = pod.get("spec") or {}, pod["metadata"]
    if match := re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path):
        return (metadata.get(match.group(1)) or {}).get(match.group(2), "")
    known = {
        "metadata.name": metadata["name"],
        "metadata.namespace": metadata.get("namespace", "default"),
        "metadata.uid": metadata.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.podIP": ip,
        "status.hostIP": NODE_IP,
    }
    return known.get(path, "")


def _secret(lookup: Callable[[str], dict | None], name: str, *, optional: bool, volume: str | None = None) -> dict:
    secret = lookup(name)
    if secret is None and not optional:
        if volume is None:
            raise ConfigError("CreateContainerConfigError", "Failed", f'Error: secret "{name}" not found')
        raise ConfigError("ContainerCreating", "FailedMount",
                          f'MountVolume.SetUp failed for volume "{volume}" : secret "{name}" not found')
    return {key: base64.b64decode(value) for key, value in ((secret or {}).get("data") or {}).items()}


def _volumes(pod: dict, lookup, pod_dir: Path, claims_dir: Path) -> dict[str, Path]:
    """Each volume as a local directory: secrets written as files, claims shared by name, hostPath in place."""
    local: dict[str, Path] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        name = volume["name"]
        if "hostPath" in volume:
            local[name] = Path(volume["hostPath"]["path"])
            if volume["hostPath"].get("type") == "DirectoryOrCreate":
                local[name].mkdir(parents=True, exist_ok=True)
            continue
        if "persistentVolumeClaim" in volume:
            local[name] = claims_dir / volume["persistentVolumeClaim"]["claimName"]
            local[name].mkdir(parents=True, exist_ok=True)
            continue
        directory = pod_dir / name
        directory.mkdir(parents=True, exist_ok=True)
        local[name] = directory
        if "secret" in volume:
            source = volume["secret"]
            data = _secret(lookup, source["secretName"], optional=bool(source.get("optional")), volume=name)
            items = source.get("items") or [{"key": key, "path": key} for key in data]
            for item in items:
                target = directory / item["path"]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data.get(item["key"], b""))
                target.chmod(item.get("mode", source.get("defaultMode", 0o644)))
    return local


def _env(pod: dict, container: dict, lookup, ip: str) -> dict[str, str]:
    env = dict(os.environ)  # the host's, so the interpreter finds its packages (an image would carry them)
    env["HOSTNAME"] = pod["metadata"]["name"]
    for source in container.get("envFrom") or []:
        if "secretRef" in source:
            data = _secret(lookup, source["secretRef"]["name"], optional=bool(source["secretRef"].get("optional")))
            for key, value in data.items():
                env[source.get("prefix", "") + key] = value.decode()
    for var in container.get("env") or []:
        value_from = var.get("valueFrom")
        if value_from is None:
            env[var["name"]] = var.get("value", "")
        elif "secretKeyRef" in value_from:
            ref = value_from["secretKeyRef"]
            data = _secret(lookup, ref["name"], optional=bool(ref.get("optional")))
            if ref["key"] not in data and not ref.get("optional"):
                raise ConfigError("CreateContainerConfigError", "Failed",
                                  f"Error: couldn't find key {ref['key']} in Secret {pod['metadata'].get('namespace')}/{ref['name']}")
            if ref["key"] in data:
                env[var["name"]] = data[ref["key"]].decode()
        elif "fieldRef" in value_from:
            env[var["name"]] = _field(pod, value_from["fieldRef"]["fieldPath"], ip)
    return env


def materialise(pod: dict, *, secrets: Callable[[str], dict | None], pod_dir: Path, claims_dir: Path,
                ip: str) -> Launch:
    """The local command, env and working directory of the pod's first container; ConfigError if not yet."""
    if pod_dir.exists():
        shutil.rmtree(pod_dir)  # a pod of the same name ran here before
    pod_dir.mkdir(parents=True)
    container = pod["spec"]["containers"][0]
    volumes = _volumes(pod, secrets, pod_dir, claims_dir)
    env = _env(pod, container, secrets, ip)
    mounts = sorted(
        ((m["mountPath"].rstrip("/"), volumes[m["name"]] / m.get("subPath", ""))
         for m in container.get("volumeMounts") or [] if m["name"] in volumes),
        key=lambda pair: -len(pair[0]),
    )

    def local(text: str) -> str:
        # A mount path is replaced where it is a whole path prefix: /data, /data/x, not /database.
        for mount_path, directory in mounts:
            text = re.sub(r"(?<![\w./-])" + re.escape(mount_path) + r"(?=/|$|[\s:;,='\"])", lambda _m, d=str(directory): d, text)
        return text

    command = [local(part) for part in (container.get("command") or []) + (container.get("args") or [])]
    if not command:
        raise ConfigError("CreateContainerError", "Failed", "Error: no command specified")
    if command[0] in _PYTHONS or Path(command[0]).name in _PYTHONS:
        command[0] = sys.executable
    for var in container.get("env") or []:
        if var.get("valueFrom") is None:
            env[var["name"]] = local(env[var["name"]])
    cwd = Path(local(container["workingDir"])) if container.get("workingDir") else pod_dir
    return Launch(command=command, env=env, cwd=cwd)


def container_status(container: dict, state: dict, *, ready: bool = False, container_id: str = "") -> dict:
    """A ``containerStatuses`` entry in the shape the API (and the client's models) require."""
    running = "running" in state
    status = {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": f"docker.io/library/{container.get('image', '')}@sha256:{'0' * 64}" if container_id else "",
        "ready": ready,
        "started": running,
        "restartCount": 0,
        "state": state,
        "lastState": {},
    }
    if container_id:
        status["containerID"] = container_id
    return status


def pod_conditions(now: str, *, ready: bool, reason: str | None = None, message: str | None = None) -> list[dict]:
    """The pod conditions a kubelet reports once the pod is on its node."""

    def condition(kind: str, status: bool, why: str | None = None, detail: str | None = None) -> dict:
        entry = {"type": kind, "status": "True" if status else "False", "lastTransitionTime": now,
                 "lastProbeTime": None}
        if why and not status:
            entry["reason"] = why
        if detail and not status:
            entry["message"] = detail
        return entry

    return [
        condition("PodReadyToStartContainers", True),
        condition("Initialized", True),
        condition("Ready", ready, reason, message),
        condition("ContainersReady", ready, reason, message),
        condition("PodScheduled", True),
    ]
