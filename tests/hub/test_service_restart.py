"""Hub service restarts, by JupyterHub itself: the hetero service runs as the hub's managed service (the hub starts
its ``command``, as ``jupyter hetero hub-config`` writes it) and is SIGKILLed at random points while alice's and
bob's servers are in use (2 times; ``HETERO_RELIABILITY_LONG=1``: 8). The hub starts it again at its next poll of
the process, which comes every 30 s (±5%) from the service's start; nothing shortens it (JupyterHub builds a
service's spawner without the hub's configuration, so ``Spawner.poll_interval`` does not reach it).

alice's server tries a call for the default 10 s (``HeteroApp.service_retry_seconds``): until the hub has started
the service again her panel's calls answer 502 ``service-unreachable`` (the panel says it is retrying), and those
made in the last 10 s are tried until they are answered. bob's server tries for 90 s, longer than the hub takes,
so his calls made at the kill, a submission included, are answered once the service is back. Every kill after the
first comes a few seconds after the hub started the service, when its next poll is some 20 s away: past alice's
window.

After each restart the invariants hold, every acknowledged submission is in the store once, none refused as
unreachable is there, and a job running across the restarts was re-adopted each time (its same process and
attempt, an ``adopted`` event), and ends well when let go. Never a 500, never a hang. The seed is printed;
``HETERO_CRASH_SEED`` replays it.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import sys
import threading
import time
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from jupyter_hetero.catalog import load_catalog
from jupyter_hetero.store import Repository

from ..builders import team_catalog
from ..conftest import DEMO_NODES
from ..harness import kill_runners_under
from ..reliability.invariants import violations, workload_processes
from .harness import CHP, HubProcess, hetero_service

pytestmark = pytest.mark.slow

KILLS = 8 if os.environ.get("HETERO_RELIABILITY_LONG") == "1" else 2
ALICE = "user/alice/hetero/api/v1/"  # through alice's own server, which forwards to the service
BOB = "user/bob/hetero/api/v1/"
WINDOW_S = 10  # alice's server: the default HeteroApp.service_retry_seconds
BACK_WITHIN_S = 90  # the hub's poll (30 s), then the service's start (5 to 20 s), with room for a loaded machine
BOB_WINDOW_S = BACK_WITHIN_S  # bob's server outwaits any restart the test accepts
GATE = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.2)\n"
FINAL = {"succeeded", "failed", "cancelled"}

BOB_RIDES_OUT_RESTARTS = f"""
def _ride_out_restarts(spawner):
    if spawner.user.name == "bob":
        spawner.args = [*spawner.args, "--HeteroApp.service_retry_seconds={BOB_WINDOW_S}"]
c.Spawner.pre_spawn_hook = _ride_out_restarts
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    root = tmp_path_factory.mktemp("hub-restart")
    service, _url = hetero_service(root, team_catalog(root), DEMO_NODES)  # vision: alice; nlp: group nlp-team
    home = root / "homes" / "alice"
    home.mkdir(parents=True)
    (home / "gate.py").write_text(GATE, encoding="utf-8")
    with HubProcess.start(root, groups={"nlp-team": ["bob"]}, users=("alice",),
                          extra_config=service + BOB_RIDES_OUT_RESTARTS) as running:
        running.spawn("alice", "bob")  # while the service starts
        yield running.with_service(("alice", "bob"))
    kill_runners_under(root)


def _service(hub: HubProcess) -> psutil.Process:
    """The hetero service's process: the hub's own child, running `jupyter hetero service` (which becomes the
    service's server)."""
    for child in psutil.Process(hub.process.pid).children():
        with contextlib.suppress(psutil.Error):
            line = child.cmdline()
            if child.status() != psutil.STATUS_ZOMBIE and ("jupyter_hetero.cli" in line
                                                            or "--HeteroApp.mode=service" in line):
                return child
    raise AssertionError("the hub runs no hetero service")


def _dead(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


class Clients:
    """Three of alice's clients at once, through her server: each submits (a quick job, a job held on a gate),
    lists her work or cancels one of her jobs, until stopped. Every answer is sorted into what it says."""

    def __init__(self, hub: HubProcess, rng: random.Random):
        self.hub, self.rng = hub, rng
        self.acknowledged: dict[str, int] = {}
        self.unreachable: set[str] = set()  # submissions answered 502 service-unreachable: never sent
        self.unknown: set[str] = set()  # submissions answered 502 outcome-unknown: perhaps done
        self.answers: dict[str, int] = {"ok": 0, "service-unreachable": 0, "outcome-unknown": 0}
        self.wrong: list[str] = []
        self._names = iter(range(10**9))
        self._lock = threading.Lock()

    def during(self, seconds_before: float, kill) -> None:
        """Clients work; after ``seconds_before`` ``kill()`` runs (and returns when the service is back); then
        they stop."""
        stop = threading.Event()
        threads = [threading.Thread(target=self._client, args=(random.Random(self.rng.random()), stop))
                   for _ in range(3)]
        for thread in threads:
            thread.start()
        try:
            time.sleep(seconds_before)
            kill()
            time.sleep(0.5)  # and some calls to the restarted service
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)
        assert not any(thread.is_alive() for thread in threads), "a client hangs"

    def call(self, method: str, route: str, body=None) -> tuple[int, object]:
        try:
            return self.hub._request(ALICE + route, method, body, token=self.hub.tokens["alice"], check=False,
                                     with_status=True)
        except OSError as exc:  # a timeout (30 s) or a dropped connection from alice's own server: never right
            return 0, repr(exc)

    def sort(self, method: str, route: str, status: int, answer, ok: tuple[int, ...]) -> str | None:
        """The answer's kind (``ok`` or a 502's reason), or None, having noted it as wrong."""
        reason = answer.get("reason") if isinstance(answer, dict) else None
        if status in ok:
            kind = "ok"
        elif status == 502 and reason in ("service-unreachable", "outcome-unknown") and answer.get("message_zh"):
            kind = reason
        else:
            with self._lock:
                self.wrong.append(f"{method} {route}: {status} {str(answer)[:300]}")
            return None
        with self._lock:
            self.answers[kind] += 1
        return kind

    def _client(self, rng: random.Random, stop: threading.Event) -> None:
        while not stop.wait(rng.uniform(0.05, 0.15)):  # a person's scripts and panel, not a load test
            action = rng.choices(("quick", "held", "list", "cancel"), (5, 2, 2, 1))[0]
            if action == "list":
                status, answer = self.call("GET", "workloads")
                self.sort("GET", "workloads", status, answer, (200,))
            elif action == "cancel":
                with self._lock:
                    mine = list(self.acknowledged.values())
                if mine:
                    workload = rng.choice(mine)
                    status, answer = self.call("DELETE", f"workloads/{workload}")
                    self.sort("DELETE", f"workloads/{workload}", status, answer, (200, 202, 409))
            else:
                with self._lock:
                    name = f"restart-{next(self._names)}"
                status, answer = self.call("POST", "workloads", _job(name, self.hub, held=action == "held"))
                kind = self.sort("POST", "workloads", status, answer, (200, 201))
                with self._lock:
                    if kind == "ok":
                        self.acknowledged[name] = answer["id"]
                    elif kind == "service-unreachable":
                        self.unreachable.add(name)
                    elif kind == "outcome-unknown":
                        self.unknown.add(name)


def _job(name: str, hub: HubProcess, *, held: bool = False) -> dict:
    """A quick job, or one held on a gate until the test opens it."""
    body = {"kind": "job", "template": "data-preprocessing", "name": name}
    if held:
        body["script"] = {"path": "gate.py", "args": [str(hub.root / "homes" / "alice" / "open")]}  # her own, seen
    else:
        body["command"] = [sys.executable, "-c", "print('done')"]
    return body


def _panel_until_back(hub: HubProcess) -> list[tuple[int, float]]:
    """alice's panel refreshing her work list until the service answers again: each refresh's status and seconds.
    Until then each is a 502 service-unreachable, told after her server tried for its window."""
    polls = []
    while True:
        began = time.monotonic()
        status, answer = hub.get(ALICE + "workloads", hub.tokens["alice"])
        polls.append((status, round(time.monotonic() - began, 1)))
        if status == 200:
            return polls
        assert (status, answer["reason"]) == (502, "service-unreachable"), answer
        assert "restarting or down" in answer["message"] and "重启" in answer["message_zh"], answer
        assert WINDOW_S - 1 < polls[-1][1] < WINDOW_S + 10, polls  # tried for the window, then told
        assert len(polls) < BACK_WITHIN_S / WINDOW_S, polls


def _checked(hub: HubProcess, store: Repository, clients: Clients, others: dict[str, int], catalog) -> None:
    """The invariants, with every acknowledged submission (the clients' and ``others``) in the store once."""
    found = violations(store, catalog, acknowledged={**clients.acknowledged, **others}, work_dir=hub.root / "work")
    names: dict[str, int] = {}
    for row in store.workloads():
        names[row.name] = names.get(row.name, 0) + 1
    found += [f"{name} was refused as unreachable but is in the store" for name in clients.unreachable if name in names]
    found += [f"{name} (outcome unknown) is in the store {names[name]} times" for name in clients.unknown
              if names.get(name, 0) > 1]
    assert not found, found
    assert not clients.wrong, clients.wrong


def test_the_hub_restarts_its_killed_service_and_users_servers_retry_with_nothing_lost(hub):
    seed = int(os.environ.get("HETERO_CRASH_SEED") or random.randrange(10**6))
    print(f"\nhub restart seed {seed} (HETERO_CRASH_SEED={seed} replays it)")
    rng = random.Random(seed)
    store = Repository(f"sqlite:///{hub.root / 'hetero.sqlite'}", clock=time.time)
    catalog = load_catalog(hub.root / "team-catalog.yaml")
    clients = Clients(hub, rng)
    alice, bob = hub.tokens["alice"], hub.tokens["bob"]

    # A job of alice's that runs across every restart: each new service must adopt it, not start it again.
    status, answer = hub._request(ALICE + "workloads", "POST", _job("across", hub, held=True), token=alice,
                                  check=False, with_status=True)
    assert status == 201, answer
    others = {"across": answer["id"]}

    def across_processes() -> set[tuple[int, int, int | None]]:
        return {found for found in workload_processes(hub.root) if found[1] == others["across"]}

    def gate_runs() -> bool:  # its runner has started its script: all its processes are there
        for pid, _, _ in across_processes():
            with contextlib.suppress(psutil.Error):
                # The script's own interpreter, not the sandbox or the runner, whose command lines name it too.
                script = psutil.Process(pid).cmdline()[1:2]
                if script and Path(script[0]).name == "gate.py":
                    return True
        return False

    hub._wait(lambda: store.workload(others["across"]).state == "running" and gate_runs(),
              "alice's held job to run", 60)
    running = across_processes()
    restarted, bob_answered, panel = [], [], []

    for kill in range(KILLS):
        service = _service(hub)

        def sigkill() -> None:
            killed = time.time()  # wall clock: compared with the new process's creation
            service.kill()
            # Gone, its port closed (a zombie until the hub's poll reaps it): until then a call may still connect
            # and be cut off (outcome-unknown).
            hub._wait(lambda: _dead(service), "the service to die", 10)
            began = time.monotonic()
            with ThreadPoolExecutor(2) as pool:  # bob's calls at the kill, while alice's panel refreshes
                listed = pool.submit(hub.get, BOB + "workloads", bob, BOB_WINDOW_S + 30)
                submitted = pool.submit(hub._request, BOB + "workloads", "POST", _job(f"bob-{kill}", hub), token=bob,
                                        check=False, with_status=True, timeout=BOB_WINDOW_S + 30)
                panel.append(_panel_until_back(hub))
                status, answer = listed.result()
                assert status == 200, (seed, status, answer)
                bob_answered.append(round(time.monotonic() - began, 1))
                status, answer = submitted.result()
                assert status == 201, (seed, status, answer)
                others[f"bob-{kill}"] = answer["id"]
            again = _service(hub)  # the hub's own child: the hub started it, none else
            assert again.pid != service.pid
            restarted.append(round(again.create_time() - killed, 1))

        clients.during(rng.uniform(0.3, 1.5), sigkill)
        _checked(hub, store, clients, others, catalog)
        # Re-adopted: the same processes and attempt, still running, said by an event of the new service.
        hub._wait(lambda: [event.type for event in store.events(workload_id=others["across"])].count("adopted")
                  == kill + 1, "the new service to adopt alice's running job", 30)
        assert across_processes() == running, (running, across_processes())
        assert store.workload(others["across"]).state == "running"
        assert len(store.attempts(others["across"])) == 1

    log = (hub.root / "hub.log").read_text(errors="replace")
    assert log.count("Service hetero exited with status -9") == KILLS, "the hub saw the service die each time"
    assert any(status == 502 for polls in panel for status, _ in polls), panel  # past alice's window: 'retrying'
    retried = len(re.findall(r"answered after \d+ attempts", log))
    assert retried >= 2 * KILLS, retried  # bob's two calls each time, at least

    # Everything that fits ends; nothing outlives its workload; the adopted job ends well.
    (hub.root / "homes" / "alice" / "open").touch()
    ids = [*clients.acknowledged.values(), *others.values()]
    deadline = time.monotonic() + 60
    while not all(store.workload(i).state in FINAL for i in ids):
        assert time.monotonic() < deadline, {i: store.workload(i).state for i in ids
                                             if store.workload(i).state not in FINAL}
        time.sleep(0.2)
    _checked(hub, store, clients, others, catalog)
    assert not workload_processes(hub.root), "a process outlived its workload"
    assert store.workload(others["across"]).state == "succeeded"
    print(f"hub restarts: kills {KILLS}, restarted by the hub {restarted} s after the kill, bob's calls at the kill "
          f"answered after {bob_answered} s, alice's panel refreshes (status, s) {panel}, calls answered after a "
          f"retry {retried}, acknowledged {len(clients.acknowledged) + len(others)}, alice's answers "
          f"{clients.answers}, outcome unknown {len(clients.unknown)}; lost none")
