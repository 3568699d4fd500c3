"""Spawners whose servers are workloads: the hetero service places a server before the spawner starts it.

    c.JupyterHub.spawner_class = "jupyter_hetero.hub.HeteroLocalSpawner"
    c.Spawner.options_form = jupyter_hetero.hub.options_form
    c.Spawner.options_from_form = jupyter_hetero.hub.options_from_form

``start()`` asks the service, as the spawning user, for a ``server`` workload of the chosen profile
(``POST /servers``), waits until the engine places it (at most ``start_timeout``), reports it started
and launches the server there; ``progress()`` streams its queue position, ETA and blockers to the
spawn-pending page meanwhile; ``stop()`` and a failed or cancelled start give its devices back
(``DELETE /servers/{id}``). A local server sees only its devices (``CUDA_VISIBLE_DEVICES``...) and runs as
its user's Unix account (the hub runs as root; each hub user needs an account of the same name).
"""

from __future__ import annotations

import asyncio
import json
import pwd
import sys
import time
from typing import Any
from urllib.parse import urlencode

from jupyterhub.spawner import LocalProcessSpawner
from tornado.httpclient import HTTPClientError
from traitlets import Any as AnyTrait
from traitlets import Dict, Float, default
from traitlets.config import Configurable

from ..i18n import N_, Message
from .service import SpawnRefused, hub_of, language_of, profiles_for, user_token

__all__ = ["HeteroLocalSpawner", "HeteroPlacement", "ServerNotPlaced"]

PLACED_STATES = ("admitted", "starting", "running")
ENDED_STATES = ("succeeded", "failed", "cancelled", "lost", "inadmissible")


class ServerNotPlaced(RuntimeError):
    """The service did not place the server (timeout, inadmissible, ended); the message says why."""


class HeteroPlacement(Configurable):
    """Mixin for a Spawner: the server is a hetero ``server`` workload, placed before it starts."""

    hetero_poll_s = Float(
        0.5, config=True,
        help="Seconds between two looks at a waiting server's workload (its place in the queue, its placement).",
    )
    hetero_workload = AnyTrait(None, allow_none=True,
                               help="The id of this server's workload at the hetero service, while it holds one.")
    hetero_started = Dict(help="The service's answer when the server was placed: its workload and environment.")

    # -- state kept by the hub, so a restarted hub can still release the server's devices --------

    def get_state(self) -> dict[str, Any]:
        state = super().get_state()
        if self.hetero_workload is not None:
            state["hetero_workload"] = self.hetero_workload
        return state

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        self.hetero_workload = state.get("hetero_workload")

    def clear_state(self) -> None:
        super().clear_state()
        self.hetero_workload = None

    def get_env(self) -> dict[str, str]:
        # The placement's variables last: a server must not see devices other than its own.
        env = super().get_env()
        env.update((self.hetero_started or {}).get("environment") or {})
        return env

    # -- the service, as the spawning user -------------------------------------------------------

    async def _hetero_call(self, route: str, body: dict | None = None, method: str | None = None) -> Any:
        hub = hub_of(self)
        return await hub._call(await user_token(self, hub), route, body, method=method)

    async def hetero_choice(self) -> dict[str, Any]:
        """The chosen profile's hetero part (template, flavor, parameters, queue); 403 for a bad choice."""
        profiles, tenant, language = await profiles_for(self)
        slug = (self.user_options or {}).get("profile")
        chosen = next((p for p in profiles if p["slug"] == slug), None) if slug else next(
            (p for p in profiles if p.get("default")), profiles[0] if profiles else None)
        if chosen is None:
            raise SpawnRefused(Message(N_("Profile {profile!r} is not one tenant {tenant} may start."),
                                       profile=slug, tenant=tenant).text(language))
        return chosen["hetero"]

    async def hetero_place(self) -> dict[str, Any]:
        """Ask for the server's workload and wait until it is placed; the service's started answer."""
        self._hetero_seen = None  # progress() must not show an earlier spawn's placement
        choice = await self.hetero_choice()
        try:
            workload = await self._hetero_call("servers", {
                "template": choice["template"], "flavor": choice["flavor"],
                "parameters": choice.get("parameters") or {}, "queue": choice.get("queue"),
                "name": f"server of {self.user.name}" + (f" ({self.name})" if self.name else ""),
                "server_name": self.name or "",
            })
        except HTTPClientError as exc:
            if exc.response is None or exc.code >= 500:
                raise
            # The service's own sentence (a forbidden template, a bad parameter) is what the user needs to read.
            raise ServerNotPlaced(f"the hetero service refused the server: {_message(exc)}") from None
        self.hetero_workload = workload["id"]
        self._hetero_seen = workload
        self.log.info("hetero server workload=%s user=%s template=%s flavor=%s", workload["id"], self.user.name,
                      choice["template"], choice["flavor"])
        deadline = time.monotonic() + self.start_timeout
        while True:
            workload = await self._hetero_call(f"workloads/{workload['id']}?lang={self._hetero_language()}")
            self._hetero_seen = workload
            if workload["state"] in PLACED_STATES and workload.get("placement"):
                break
            if workload["state"] in ENDED_STATES:
                raise ServerNotPlaced(f"the server was not placed: {workload['state']}: {workload.get('reason')}")
            if time.monotonic() >= deadline:
                raise ServerNotPlaced(f"the server was not placed within {self.start_timeout} s: "
                                      + self._hetero_waiting_text(workload, "en"))
            await asyncio.sleep(self.hetero_poll_s)
        where = f"{type(self).__name__} of hub user {self.user.name}"
        self.hetero_started = await self._hetero_call(f"servers/{workload['id']}/started", {"where": where})
        return self.hetero_started

    async def hetero_release(self, workload_id: int | None = None, failed: str | None = None) -> None:
        """Give the server's devices back (``failed``: its launch failed, for this reason); a service that
        cannot be reached is logged, not fatal."""
        workload_id = workload_id if workload_id is not None else self.hetero_workload
        self.hetero_workload = None
        if workload_id is None:
            return
        query = f"?{urlencode({'failed': failed[:1000]})}" if failed else ""
        try:
            await self._hetero_call(f"servers/{workload_id}{query}", method="DELETE")
        except (HTTPClientError, OSError, asyncio.TimeoutError) as exc:
            self.log.warning("hetero server workload=%s not released: %s", workload_id, exc)

    async def hetero_start(self, launch):
        """``launch()`` once placed; any failure or cancellation on the way releases the workload."""
        self.hetero_started = {}
        try:
            await self.hetero_place()
            return await launch()
        except BaseException as exc:
            # Placed, then the launch itself failed: the workload ends failed with the reason, not done.
            launch_failed = self.hetero_started and not isinstance(exc, asyncio.CancelledError)
            await asyncio.shield(self.hetero_release(failed=f"{type(exc).__name__}: {exc}" if launch_failed else None))
            raise

    async def hetero_stop(self, stop, now: bool) -> None:
        """``stop(now=now)``, then the devices back (kept first: local spawners clear their state on stop)."""
        workload_id = self.hetero_workload
        try:
            await stop(now=now)
        finally:
            await self.hetero_release(workload_id)

    # -- the spawn-pending page ------------------------------------------------------------------

    def _hetero_language(self) -> str:
        return language_of(self, hub_of(self))

    def _hetero_waiting_text(self, workload: dict[str, Any], language: str) -> str:
        parts = [Message(N_("Waiting in queue {queue}"), queue=workload["queue"]).text(language)]
        if workload.get("position") is not None:
            parts.append(Message(N_("position {position}"), position=workload["position"]).text(language))
        if workload.get("eta") is not None:
            minutes = max(0, round((workload["eta"] - time.time()) / 60))
            parts.append(Message(N_("ETA ~{minutes} min"), minutes=minutes).text(language))
        text = ", ".join(parts)
        blockers = [blocker["message"] for blocker in (workload.get("blockers") or [])[:3]]
        if blockers:
            text += ": " + "; ".join(blockers)
        return text

    async def progress(self):
        """Queue position, ETA and the top blockers while the service has not placed the server yet."""
        language = self._hetero_language()
        said = None
        while True:
            workload = getattr(self, "_hetero_seen", None)
            if workload is not None and workload["state"] in PLACED_STATES and workload.get("placement"):
                slot = workload["placement"]["slots"][0]
                yield {"progress": 50, "message": Message(
                    N_("Placed on node {node} ({flavor}, devices {devices}); starting the server"), node=slot["node"],
                    flavor=workload["placement"]["flavor"],
                    devices=",".join(str(d["index"]) for d in slot["devices"]) or "-").text(language)}
                break
            if workload is not None and workload["state"] in ENDED_STATES:
                return
            if workload is not None:
                text = self._hetero_waiting_text(workload, language)
                if text != said:
                    said = text
                    yield {"progress": 10, "message": text,
                           "hetero": {key: workload.get(key) for key in ("id", "state", "position", "eta", "blockers")}}
            await asyncio.sleep(self.hetero_poll_s)
        async for event in super().progress():  # the spawner's own (a pod's events, for KubeSpawner)
            yield event


def _message(error: HTTPClientError) -> str:
    try:
        return json.loads(error.response.body).get("message") or str(error)
    except (ValueError, AttributeError):
        return str(error)


class HeteroLocalSpawner(HeteroPlacement, LocalProcessSpawner):
    """LocalProcessSpawner whose server runs once placed, as its user's Unix account, seeing only its
    placement's devices."""

    @default("cmd")
    def _default_cmd(self) -> list[str]:
        # The hub's own interpreter has jupyter-hetero (the hub imports it); a bare `jupyterhub-singleuser`
        # would be whichever one the hub's PATH finds first, if any.
        return [sys.executable, "-m", "jupyterhub.singleuser"]

    async def start(self):
        try:
            pwd.getpwnam(self.user.name)
        except KeyError:
            # Refused before queueing: no devices are held for a server that cannot start.
            raise SpawnRefused(Message(N_("Hub user {user} has no Unix account on this machine: an admin must "
                                          "create it before the user's server can start."),
                                       user=self.user.name).text(self._hetero_language())) from None
        return await self.hetero_start(super().start)

    async def stop(self, now: bool = False) -> None:
        await self.hetero_stop(super().stop, now)
