"""What schemathesis does not send (it generates valid UTF-8 and finite numbers only), swept over every parameter of
the served OpenAPI document against a real server: text that is not UTF-8 (stray bytes; a surrogate, JSON's
"\\ud800" or UTF-8-encoded in a URL) into every path and query parameter and every property of a JSON body, nested
ones too; and numbers that are not finite (NaN, Infinity, -Infinity, and 1e400, which JSON's parser reads as
infinity) into every one that takes a number.

Every such request must be refused with a 4xx JSON answer whose ``field`` names the parameter (a workload id in a
path that is no integer names no workload: a 404 saying so); never a 5xx, never taken. Afterwards the store holds
nothing of them (every row requests write; what the platform writes on its own timers meanwhile is told apart by
its writer, see ``_rows``) and the invariants hold. Each operation is called as a caller its rule (rules.py) lets
past, so an operation without a rule fails the test. ``pytest -s`` prints the figures.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests
from sqlalchemy import select

from jupyter_hetero.catalog import load_catalog
from jupyter_hetero.store import Repository
from jupyter_hetero.store.tables import Base

from ..conftest import _token
from ..harness import until
from .invariants import violations
from .rules import BODIES, MODEL, QUERIES, RULES, fill

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Hostile:
    """A value as it is written in a URL and in a JSON body."""

    label: str
    in_url: str
    in_json: bytes


TEXT = (Hostile("the bytes FF FE", "%FF%FE", b'"\xff\xfe"'),
        Hostile("a lone surrogate, U+D800", "%ED%A0%80", b'"\\ud800"'))
NOT_FINITE = tuple(Hostile(token, token, token.encode()) for token in ("NaN", "Infinity", "-Infinity", "1e400"))
DEPTH = 3  # body properties nested this deep: kernels.0.workload_id, script.args.0, connection.shell_port


@dataclass(frozen=True)
class Parameter:
    where: str  # path, query, header or body
    name: str  # as an answer's field names it: "workload_id", "kernels.0.last_activity"
    numeric: bool  # takes a number, so is sent the numbers that are not finite too
    location: tuple = ()  # in the body: its keys and indexes


def test_every_parameter_refuses_text_that_is_not_utf8_and_numbers_that_are_not_finite(team_server):
    api = team_server.api
    session = requests.Session()
    document = session.get(f"{api}/openapi.json", headers=_auth("root"), timeout=30).json()
    served = [(method, path, operation) for path, methods in document["paths"].items()
              for method, operation in methods.items()]
    assert not (unruled := sorted(f"{m.upper()} {p}" for m, p, _ in served if (m, p) not in RULES)), \
        f"operations without a rule in rules.py: {unruled}"

    # What the paths name (rules.fill): alice's workload, her service "matrix" and her schedule.
    workload = _post(session, api, "workloads", {"kind": "job", "template": "data-preprocessing", "command": ["true"]})
    _post(session, api, "services", {"name": "matrix", "command": MODEL, "parameters": {"devices": 1}})
    schedule = _post(session, api, "schedules", BODIES[("post", "/schedules")])
    store = Repository(team_server.store_url, clock=time.time)
    until(lambda: session.get(f"{api}/workloads/{workload['id']}", headers=_auth("alice"), timeout=30)
          .json()["state"] == "succeeded", "alice's job to end")
    until(lambda: session.get(f"{api}/services/matrix", headers=_auth("alice"), timeout=30)
          .json()["ready_replicas"] == 1, "alice's service to be ready")
    before = _rows(store)

    started, wrong, covered, sent = time.monotonic(), [], Counter(), 0
    for method, path, operation in served:
        caller = next(user for user in ("alice", "carol", "root") if user in RULES[(method, path)])
        for parameter in _parameters(operation, document["components"]["schemas"]):
            covered[(method, path)] += 1
            for hostile in TEXT + (NOT_FINITE if parameter.numeric else ()):
                url, body = _request(api, method, path, workload["id"], parameter, hostile, schedule["id"])
                headers = _auth(caller)
                if parameter.where == "header":  # the bytes themselves: HTTP has no escape for them
                    headers[parameter.name] = urllib.parse.unquote_to_bytes(hostile.in_url)
                response = session.request(method.upper(), url, data=body, headers=headers, timeout=60)
                sent += 1
                if problem := _problem(response, parameter, hostile):
                    wrong.append(f"{method.upper()} {path} {parameter.where} {parameter.name} = {hostile.label} "
                                 f"as {caller}: {problem}")
    print(f"\nswept {len(covered)} operations, {sum(covered.values())} parameters ({len(served) - len(covered)} "
          f"operations take none), {sent} requests in {time.monotonic() - started:.1f} s; {len(wrong)} wrong")
    assert not wrong, "\n".join(wrong)
    left = _difference(before, _rows(store))
    assert not left, f"a refused request left something in the store: {left}"
    assert not violations(store, load_catalog(team_server.catalog), work_dir=team_server.work_dir)
    store.close()


def _auth(user: str) -> dict:
    return {"Authorization": f"token {_token(user)}"}


def _post(session: requests.Session, api: str, route: str, body: dict) -> dict:
    response = session.post(f"{api}/{route}", json=body, headers=_auth("alice"), timeout=60)
    assert response.status_code == 201, response.text
    return response.json()


def _rows(store: Repository) -> dict[str, dict[tuple, dict]]:
    """Every row of each table by its key, less those the platform writes on its own timers whatever requests come,
    each known by its writer's mark in the row (not by its table: a refused request that wrote an event, an alert or
    a sample would still show). Those writers, and their marks:

    - the monitor, sampling a running workload every ``metric_interval_s``: a measured sample names the source that
      measured it (procfs, nvidia-smi, exporter:...), never "reported", which only POST /workloads/{id}/metrics writes;
    - the alert evaluator, every ``alert_interval``: each firing (or resolution) writes the alert with an event naming
      it, of its rule and subject and at its time, in one transaction (``Repository.fire_alert``, ``resolve_alert``).
      What the evaluator reads (workloads, attempts, services, nodes, onboarding) is compared in full, so an alert
      it fires during the sweep is due to time passing, not to a request; an alert without its event is not its.

    Under load the setup (alice's service holds her tenant's one T4: quota-nearly-exhausted is due) and the sweep
    outlast an interval of each, so their rows land before or during the sweep as it happens."""
    with store.session() as session:
        rows = {table.name: {tuple(row[column.name] for column in table.primary_key.columns): dict(row)
                             for row in session.execute(select(table)).mappings()}
                for table in Base.metadata.sorted_tables}
    for sample in list(rows["metric_samples"].values()):
        if sample["source"] != "reported":
            del rows["metric_samples"][(sample["id"],)]
    alerts = rows["alerts"]
    for event in [e for e in rows["events"].values() if e["type"] in ("alert-firing", "alert-resolved")]:
        alert = alerts.get((event["data"].get("alert"),))
        firing = event["type"] == "alert-firing"
        if alert is not None and (event["data"].get("rule"), event["data"].get("subject")) == (
                alert["rule"], alert["subject"]) and event["at"] == alert["fired_at" if firing else "resolved_at"]:
            del rows["events"][(event["id"],)]
            if firing:
                del alerts[(alert["id"],)]
    return rows


def _difference(before: dict[str, dict[tuple, dict]], after: dict[str, dict[tuple, dict]]) -> dict[str, list]:
    """Per table, the rows added, changed (the columns that changed, before and after) and gone since ``before``."""
    found: dict[str, list] = {}
    for table, rows in after.items():
        was = before[table]
        changes = [*({"added": rows[key]} for key in sorted(rows.keys() - was.keys())),
                   *({"changed": key, **{column: (value, rows[key][column]) for column, value in was[key].items()
                                         if rows[key][column] != value}}
                     for key in sorted(rows.keys() & was.keys()) if rows[key] != was[key]),
                   *({"gone": was[key]} for key in sorted(was.keys() - rows.keys()))]
        if changes:
            found[table] = changes
    return found


def _parameters(operation: dict, schemas: dict) -> Iterator[Parameter]:
    """Every path, query and header parameter of ``operation``, and every property of its body down to DEPTH."""
    for parameter in operation.get("parameters", []):
        yield Parameter(parameter["in"], parameter["name"], _numeric(_alternatives(parameter["schema"], schemas)))
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body is not None:
        seen = set()
        for location, alternatives in _properties(body, schemas, ()):
            if location not in seen:
                seen.add(location)
                yield Parameter("body", ".".join(map(str, location)), _numeric(alternatives), location)


def _properties(schema: dict, schemas: dict, location: tuple) -> Iterator[tuple[tuple, list[dict]]]:
    """(location, its schema's alternatives) of each property, array item and map value under ``schema``."""
    if len(location) >= DEPTH:
        return
    for alternative in _alternatives(schema, schemas):
        children = list(alternative.get("properties", {}).items())
        extra = alternative.get("additionalProperties")
        if extra:  # a map: one of its values, under a name of its own
            children.append(("x", extra if isinstance(extra, dict) else {}))
        if "items" in alternative:
            children.append((0, alternative["items"]))
        for key, child in children:
            yield location + (key,), _alternatives(child, schemas)
            yield from _properties(child, schemas, location + (key,))


def _alternatives(schema: dict, schemas: dict) -> list[dict]:
    """``schema``'s alternatives (its anyOf's), references resolved."""
    if "$ref" in schema:
        return _alternatives(schemas[schema["$ref"].rsplit("/", 1)[1]], schemas)
    if "anyOf" in schema:
        return [resolved for choice in schema["anyOf"] for resolved in _alternatives(choice, schemas)]
    return [schema]


def _numeric(alternatives: list[dict]) -> bool:
    """Whether a value of these alternatives may be a number (a schema of no type takes anything)."""
    types = set()
    for alternative in alternatives:
        kind = alternative.get("type", ["number"] if not {"enum", "const"} & set(alternative) else [])
        types.update([kind] if isinstance(kind, str) else kind)
    return bool(types & {"integer", "number"})


def _request(api: str, method: str, path: str, workload_id: int, parameter: Parameter,
             hostile: Hostile, schedule_id: int) -> tuple[str, bytes | None]:
    """The URL and body of a call of an otherwise valid request (rules.py's) with ``hostile`` in ``parameter``."""
    route = path.replace(f"{{{parameter.name}}}", hostile.in_url) if parameter.where == "path" else path
    query = urllib.parse.urlencode(QUERIES.get((method, path), {}))
    if parameter.where == "query":
        query = "&".join(filter(None, (query, f"{parameter.name}={hostile.in_url}")))
    url = f"{api}{fill(route, workload_id=str(workload_id), schedule_id=str(schedule_id))}" + (
        f"?{query}" if query else "")
    if method not in ("post", "patch"):
        return url, None
    body = dict(BODIES.get((method, path), {}))
    if parameter.where == "body":
        value = "\x00hostile"  # a placeholder, replaced in the JSON text by the hostile token
        for key in reversed(parameter.location[1:]):
            value = [value] if isinstance(key, int) else {key: value}
        body[parameter.location[0]] = value
    return url, json.dumps(body).encode().replace(b'"\\u0000hostile"', hostile.in_json)


def _problem(response: requests.Response, parameter: Parameter, hostile: Hostile) -> str | None:
    """What is wrong with ``response`` to ``hostile`` in ``parameter``, or None."""
    status = response.status_code
    if not 400 <= status < 500:
        return f"{status}: {response.text[:300]}"
    try:
        answer = response.json()
    except ValueError:
        return f"{status} whose body is not JSON: {response.text[:200]!r}"
    if not isinstance(answer, dict) or not answer.get("message"):
        return f"{status} without a message: {answer!r:.200}"
    if (status == 404 and parameter.where == "path" and parameter.numeric and hostile in NOT_FINITE
            and "does not exist" in answer["message"]):
        return None  # an id that is no integer names nothing
    field = re.sub(r"\[(\d+)\]", r".\1", str(answer.get("field")))  # the body's "kernels[0].x" is "kernels.0.x"
    if status != 400 or field != parameter.name:
        return f"{status} naming {answer.get('field')!r}, not {parameter.name!r}: {answer['message']}"
    # Refused for the value, not for something else about the field (an unknown name: the map's "x"). A query's
    # "NaN" for an integer is refused as no integer, which it is not. A header's value is ASCII.
    why = "ASCII" if parameter.where == "header" else "UTF-8" if hostile in TEXT else "finite"
    if (parameter.where == "body" or hostile in TEXT) and why not in answer["message"]:
        return f"400 whose message does not say the value is not {why}: {answer['message']}"
    return None
