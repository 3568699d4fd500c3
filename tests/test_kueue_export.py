"""The Kueue export: every object valid for Kueue's own CRD schemas, and the catalog's by value.

The schemas (tests/data/kueue/, from a Kueue release, named in each file) are OpenAPI v3 as the API
server reads them, checked here with jsonschema plus what the API server adds to it:
- unknown fields are errors (the server's strict field validation, ``kubectl apply``'s default),
  except under ``x-kubernetes-preserve-unknown-fields`` or ``additionalProperties``;
- ``x-kubernetes-int-or-string`` takes an integer or a string (the schemas also spell it as ``anyOf``);
- ``x-kubernetes-list-type: map`` keys and ``set`` items are unique;
- ``x-kubernetes-validations`` (CEL) rules are checked by the Python predicate written for each rule's
  text below, after Kueue's defaults; rules on ``oldSelf`` only judge updates and are skipped, and a
  rule with no predicate fails the test, so a newer schema cannot pass unread.
Formats (``int32``, ``date-time``) are annotations for jsonschema and are not checked. Kueue's
admission webhook adds rules for ClusterQueues that no schema says (``kueue_webhook_errors``, from
``pkg/webhooks/clusterqueue_webhook.go`` of the same release).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from jupyter_hetero.backends.kubernetes import quantities
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog, parse_catalog
from jupyter_hetero.export.kueue import (
    API_VERSION,
    UNEXPRESSED_ANNOTATION,
    cohort_name,
    Unexpressed,
    device_resource,
    kueue_export,
    kueue_objects,
    local_queue_name,
    priority_class_name,
)

from .builders import team_catalog

SCHEMAS = Path(__file__).parent / "data" / "kueue"
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# Label values: at most 63 of alphanumerics, '-', '_', '.', starting and ending alphanumeric.
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def _fungibility(f):
    return "preference" not in f or (f.get("whenCanBorrow", "MayStopSearch") == "TryNextFlavor"
                                     and f.get("whenCanPreempt", "TryNextFlavor") == "TryNextFlavor")


def _reclaim_and_borrow(p):
    return not (p.get("reclaimWithinCohort", "Never") == "Never" and "borrowWithinCohort" in p
                and p["borrowWithinCohort"].get("policy", "Never") != "Never")


def _no_borrowing_without_cohort(spec):
    return "cohortName" in spec or "resourceGroups" not in spec or all(
        "borrowingLimit" not in r for g in spec["resourceGroups"] for f in g["flavors"] for r in f["resources"])


# The CEL rules of the schemas, by their text, as Python over the object after Kueue's defaults.
CEL = {
    "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])":
        lambda s: all(x["effect"] in _EFFECTS for x in s),
    "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)":
        lambda s: all("key" in x or x.get("operator") == "Exists" for x in s),
    "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)":
        lambda s: all("tolerationSeconds" not in x or x.get("effect") == "NoExecute" for x in s),
    "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])":
        lambda s: all(x.get("operator", "Equal") in ("Equal", "Exists") for x in s),
    "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)":
        lambda s: all(not (x.get("operator") == "Exists" and "value" in x) for x in s),
    "self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])":
        lambda s: all(x.get("effect", "NoSchedule") in _EFFECTS for x in s),
    "!has(self.topologyName) || self.nodeLabels.size() >= 1":
        lambda s: "topologyName" not in s or len(s.get("nodeLabels", {})) >= 1,
    "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')":
        _fungibility,
    "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  self.borrowWithinCohort.policy != 'Never')":
        _reclaim_and_borrow,
    "self.flavors.all(x, size(x.resources) == size(self.coveredResources))":
        lambda s: all(len(f["resources"]) == len(s["coveredResources"]) for f in s["flavors"]),
    "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, "
    "!has(r.borrowingLimit)))) : true":
        _no_borrowing_without_cohort,
}


def _strict_properties(validator, properties, instance, schema):
    yield from _BASE.VALIDATORS["properties"](validator, properties, instance, schema)
    if validator.is_type(instance, "object") and "additionalProperties" not in schema \
            and not schema.get("x-kubernetes-preserve-unknown-fields"):
        for key in sorted(set(instance) - set(properties)):
            yield jsonschema.ValidationError(f"unknown field {key!r}")


def _int_or_string(validator, value, instance, schema):
    if value and not (isinstance(instance, str) or (isinstance(instance, int) and not isinstance(instance, bool))):
        yield jsonschema.ValidationError(f"{instance!r} is neither an integer nor a string")


def _list_type(validator, kind, instance, schema):
    if not validator.is_type(instance, "array"):
        return
    if kind == "map":
        keys = [tuple(item.get(k) for k in schema.get("x-kubernetes-list-map-keys", ())) for item in instance]
    elif kind == "set":
        keys = [repr(item) for item in instance]
    else:
        return
    if len(set(keys)) != len(keys):
        yield jsonschema.ValidationError(f"duplicate entries in a list of type {kind}: {keys}")


def _cel(validator, rules, instance, schema):
    for rule in rules:
        if "oldSelf" in rule["rule"]:
            continue  # a transition rule: it judges an update against the stored object
        check = CEL.get(rule["rule"])
        if check is None:
            yield jsonschema.ValidationError(f"no predicate for the CEL rule {rule['rule']!r}")
        elif not check(instance):
            yield jsonschema.ValidationError(rule.get("message") or rule["rule"])


_BASE = jsonschema.Draft7Validator
CrdValidator = jsonschema.validators.extend(_BASE, {
    "properties": _strict_properties,
    "x-kubernetes-int-or-string": _int_or_string,
    "x-kubernetes-list-type": _list_type,
    "x-kubernetes-validations": _cel,
})


def _schemas() -> dict[str, dict]:
    found = {}
    for path in sorted(SCHEMAS.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        found[data["kind"]] = data
    return found


SCHEMA = _schemas()


def crd_errors(obj: dict) -> list[str]:
    """Why the API server (with Kueue's CRDs) would refuse ``obj`` at creation; empty when it would not."""
    entry = SCHEMA.get(obj.get("kind"))
    if entry is None:
        return [f"no schema for kind {obj.get('kind')!r}"]
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in CrdValidator(entry["openAPIV3Schema"]).iter_errors(obj)]
    if obj.get("apiVersion") != f"{entry['group']}/{entry['version']}":
        errors.append(f"apiVersion {obj.get('apiVersion')!r} is not {entry['group']}/{entry['version']}")
    # ObjectMeta is `type: object` in a CRD; the API server checks it with its own rules.
    metadata = obj.get("metadata", {})
    if not _DNS_LABEL.match(metadata.get("name", "")):
        errors.append(f"metadata.name {metadata.get('name')!r} is not a DNS label")
    if (entry["scope"] == "Namespaced") != ("namespace" in metadata):
        errors.append(f"a {entry['scope']} object {'needs' if entry['scope'] == 'Namespaced' else 'has no'} namespace")
    if "namespace" in metadata and not _DNS_LABEL.match(metadata["namespace"]):
        errors.append(f"metadata.namespace {metadata['namespace']!r} is not a DNS label")
    errors += [f"label {k}={v!r} has an invalid value" for k, v in metadata.get("labels", {}).items()
               if not isinstance(v, str) or not _LABEL_VALUE.match(v)]
    return errors


def kueue_webhook_errors(obj: dict) -> list[str]:
    """Why Kueue's webhook would refuse a ClusterQueue that its schema accepts; empty when it would not."""
    if obj["kind"] != "ClusterQueue":
        return []
    spec, errors = obj["spec"], []
    covered_before, flavors_before = set(), set()
    for group in spec.get("resourceGroups", []):
        errors += [f"resource {r} is covered twice" for r in group["coveredResources"] if r in covered_before]
        covered_before |= set(group["coveredResources"])
        for flavor in group["flavors"]:
            if flavor["name"] in flavors_before:
                errors.append(f"flavor {flavor['name']} is listed twice")
            flavors_before.add(flavor["name"])
            for row, covered in zip(flavor["resources"], group["coveredResources"]):
                where = f"{flavor['name']} {row['name']}"
                if row["name"] != covered:
                    errors.append(f"{where}: must match the name in coveredResources ({covered})")
                amounts = {key: quantities.parse_quantity(row[key])
                           for key in ("nominalQuota", "borrowingLimit", "lendingLimit") if key in row}
                errors += [f"{where}: {key} is negative" for key, amount in amounts.items() if amount < 0]
                if "cohortName" not in spec:
                    errors += [f"{where}: {key} needs a cohort" for key in ("borrowingLimit", "lendingLimit") if key in row]
                if amounts.get("lendingLimit", 0) > amounts["nominalQuota"]:
                    errors.append(f"{where}: lendingLimit is above nominalQuota")
    return errors


@pytest.fixture(scope="module")
def shipped():
    catalog = load_catalog(DEFAULT_CATALOG_PATH)
    return catalog, kueue_objects(catalog)


def _team_catalog(directory) -> str:
    """The two-tenant catalog; nlp has fractional quotas with limits, an Ascend share and two queues."""
    return team_catalog(directory, queues={"training": {"kueue_queue": "team-training"}},
                        nlp={"queues": ["batch", "training"], "quotas": {
                            "a100-80g": {"nominal": {"devices": 2.5, "cpu": 12.5, "memory": "1536Mi"},
                                         "borrowing_limit": {"devices": 1, "cpu": 4, "memory": "8Gi"},
                                         "lending_limit": {"devices": 0.5}},
                            "ascend-910b": {"nominal": {"devices": 4, "cpu": 64, "memory": "256Gi"}}}})


@pytest.fixture(scope="module")
def teams(tmp_path_factory):
    path = _team_catalog(tmp_path_factory.mktemp("kueue"))
    catalog = load_catalog(path)
    return catalog, kueue_objects(catalog)


def _of(objects, kind):
    return {(o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects if o["kind"] == kind}


def test_the_schemas_are_kept_with_their_release_and_licence():
    assert set(SCHEMA) == {"ResourceFlavor", "ClusterQueue", "LocalQueue", "Cohort", "WorkloadPriorityClass"}
    for path in SCHEMAS.glob("*.yaml"):
        header = path.read_text(encoding="utf-8").split("\n", 4)
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert f"release {data['kueue_release']}" in header[1] and "config/components/crd/bases/" in header[2]
        assert "Apache-2.0" in header[3]
        assert f"{data['group']}/{data['version']}" == API_VERSION
        jsonschema.Draft7Validator.check_schema(data["openAPIV3Schema"])


@pytest.mark.parametrize("which", ["shipped", "teams"])
def test_every_exported_object_is_valid_for_kueues_crds(which, request):
    _, objects = request.getfixturevalue(which)
    assert {o["kind"] for o in objects} == set(SCHEMA)
    for obj in objects:
        assert crd_errors(obj) == [], (obj["kind"], obj["metadata"]["name"])
        assert kueue_webhook_errors(obj) == [], obj["metadata"]["name"]


def _broken(objects, kind, change):
    import copy

    obj = copy.deepcopy(next(o for o in objects if o["kind"] == kind))
    change(obj)
    return obj


def _cq_flavor(obj):
    return obj["spec"]["resourceGroups"][0]["flavors"][0]


BREAKAGES = [
    pytest.param("ClusterQueue", lambda o: _cq_flavor(o)["resources"][0].update(nominalQuota="8 cores"),
                 "does not match", id="a quota that is not a quantity"),
    pytest.param("ClusterQueue", lambda o: _cq_flavor(o)["resources"].pop(), "same number of resources",
                 id="a flavor without one of the covered resources (CEL)"),
    pytest.param("ClusterQueue", lambda o: o["spec"]["resourceGroups"][0]["flavors"].append(_cq_flavor(o)),
                 "duplicate entries", id="a flavor listed twice (list-map keys)"),
    pytest.param("ClusterQueue", lambda o: o["spec"].update(queueingStrategy="FIFO"), "is not one of",
                 id="an unknown queueing strategy"),
    pytest.param("ClusterQueue", lambda o: o["spec"]["preemption"].update(reclaimWithinCohort="Never",
                                                                         borrowWithinCohort={"policy": "LowerPriority"}),
                 "reclaimWithinCohort=Never", id="borrowing preemption without reclaim (CEL)"),
    pytest.param("ClusterQueue", lambda o: (o["spec"].pop("cohortName"),
                                            _cq_flavor(o)["resources"][0].update(borrowingLimit="1")),
                 "borrowingLimit must be nil", id="a borrowing limit without a cohort (CEL)"),
    pytest.param("ClusterQueue", lambda o: _cq_flavor(o)["resources"][0].update(lendingLimit="100000"),
                 "lendingLimit is above nominalQuota", id="lending more than the nominal quota (webhook)"),
    pytest.param("ClusterQueue", lambda o: _cq_flavor(o)["resources"].reverse(), "must match the name",
                 id="resources out of the covered order (webhook)"),
    pytest.param("ResourceFlavor", lambda o: o["spec"].update(nodeLabel={"a": "b"}), "unknown field 'nodeLabel'",
                 id="a misspelled field"),
    pytest.param("ResourceFlavor", lambda o: o["spec"].update(
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "value": "x", "effect": "NoSchedule"}]),
        "a value must be empty", id="an Exists toleration with a value (CEL)"),
    pytest.param("ResourceFlavor", lambda o: o["spec"].update(nodeLabels={f"k{i}": "v" for i in range(9)}),
                 "too many properties", id="more node labels than a flavor takes"),
    pytest.param("LocalQueue", lambda o: o["spec"].update(clusterQueue="Team_A"), "does not match",
                 id="a ClusterQueue name that is not DNS"),
    pytest.param("LocalQueue", lambda o: o["metadata"].pop("namespace"), "needs namespace",
                 id="a LocalQueue without a namespace"),
    pytest.param("Cohort", lambda o: o["spec"].update(parentName="Parent"), "does not match",
                 id="a parent cohort that is not DNS"),
    pytest.param("WorkloadPriorityClass", lambda o: o.pop("value"), "'value' is a required property",
                 id="a priority class without a value"),
    pytest.param("WorkloadPriorityClass", lambda o: o.update(apiVersion="kueue.x-k8s.io/v1"), "apiVersion",
                 id="another API version"),
]


@pytest.mark.parametrize("kind, change, reason", BREAKAGES)
def test_a_broken_object_fails_validation(shipped, kind, change, reason):
    _, objects = shipped
    assert crd_errors(next(o for o in objects if o["kind"] == kind)) == []
    broken = _broken(objects, kind, change)
    errors = crd_errors(broken) or kueue_webhook_errors(broken)  # the webhook sees what the schema passed
    assert any(reason in error for error in errors), errors


def test_an_unread_cel_rule_fails_validation():
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self.size() < 3"}]}
    assert [e.message for e in CrdValidator(schema).iter_errors({})] == ["no predicate for the CEL rule 'self.size() < 3'"]


def _amount(quantity: str, resource: str) -> int:
    if resource == "cpu":
        return quantities.cpu_milli(quantity)
    if resource == "memory":
        return quantities.memory_mib(quantity)
    return int(quantities.parse_quantity(quantity) * 1000)  # devices, in milli-devices as the catalog counts


_FIELDS = {"cpu": "cpu_milli", "memory": "memory_mib"}


@pytest.mark.parametrize("which", ["shipped", "teams"])
def test_each_tenants_quotas_are_the_catalogs(which, request):
    catalog, objects = request.getfixturevalue(which)
    queues = _of(objects, "ClusterQueue")
    assert {name for _, name in queues} == {f"hetero-{t.name}" for t in catalog.tenants}
    for tenant in catalog.tenants:
        spec = queues[(None, f"hetero-{tenant.name}")]["spec"]
        assert spec["cohortName"] == cohort_name(tenant.cohort)
        assert spec["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": f"hetero-{tenant.name}"}}
        (group,) = spec["resourceGroups"]
        exported = {f["name"]: {r["name"]: r for r in f["resources"]} for f in group["flavors"]}
        assert list(exported) == [f"hetero-{f.name}" for f in catalog.flavors if f.name in tenant.quotas]
        for flavor_name, quota in tenant.quotas.items():
            rows = exported[f"hetero-{flavor_name}"]
            own = device_resource(catalog.flavor(flavor_name))
            for resource in group["coveredResources"]:
                field = _FIELDS.get(resource, "device_milli")
                if resource not in ("cpu", "memory", own):
                    assert rows[resource] == {"name": resource, "nominalQuota": "0"}
                    continue
                assert _amount(rows[resource]["nominalQuota"], resource) == getattr(quota.nominal, field)
                nominal = getattr(quota.nominal, field)
                for key, limit in (("borrowingLimit", quota.borrowing_limit), ("lendingLimit", quota.lending_limit)):
                    if limit is None:
                        assert key not in rows[resource]
                    elif key == "lendingLimit":  # above the nominal quota the engine lends it all, as Kueue does
                        assert _amount(rows[resource][key], resource) == min(getattr(limit, field), nominal)
                    else:
                        assert _amount(rows[resource][key], resource) == getattr(limit, field)
        # Kueue's webhook: a resource is covered by one group, and each flavor has its device resource there.
        assert len(set(group["coveredResources"])) == len(group["coveredResources"])
        assert {device_resource(catalog.flavor(f)) for f in tenant.quotas} - {None} <= set(group["coveredResources"])


def test_fractions_and_limits_are_kubernetes_quantities(teams):
    _, objects = teams
    rows = {r["name"]: r for f in _of(objects, "ClusterQueue")[(None, "hetero-nlp")]["spec"]["resourceGroups"][0]["flavors"]
            if f["name"] == "hetero-a100-80g" for r in f["resources"]}
    assert rows["nvidia.com/gpu"] == {"name": "nvidia.com/gpu", "nominalQuota": "2500m", "borrowingLimit": "1",
                                      "lendingLimit": "500m"}
    assert rows["cpu"] == {"name": "cpu", "nominalQuota": "12500m", "borrowingLimit": "4", "lendingLimit": "0"}
    assert rows["memory"] == {"name": "memory", "nominalQuota": "1536Mi", "borrowingLimit": "8Gi", "lendingLimit": "0"}
    assert rows["huawei.com/Ascend910"] == {"name": "huawei.com/Ascend910", "nominalQuota": "0"}


def test_a_lending_limit_above_the_nominal_quota_lends_it_all(tmp_path):
    path = team_catalog(tmp_path, vision={"quotas": {
        "t4": {"nominal": {"devices": 1, "cpu": 16, "memory": "64Gi"}, "lending_limit": {"devices": 3, "cpu": 8}}}})
    objects = kueue_objects(load_catalog(path))
    queue = _of(objects, "ClusterQueue")[(None, "hetero-vision")]
    rows = {r["name"]: r["lendingLimit"] for r in queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert rows == {"cpu": "8", "memory": "0", "nvidia.com/gpu": "1"}
    assert crd_errors(queue) == [] and kueue_webhook_errors(queue) == []


@pytest.mark.parametrize("which", ["shipped", "teams"])
def test_every_flavor_a_template_can_use_is_a_resource_flavor(which, request):
    catalog, objects = request.getfixturevalue(which)
    flavors = _of(objects, "ResourceFlavor")
    usable = {f for template in catalog.templates for f in template.flavors}
    assert {f"hetero-{f}" for f in usable} <= {name for _, name in flavors}
    assert {name for _, name in flavors} == {f"hetero-{f.name}" for f in catalog.flavors}
    referred = {f["name"] for q in _of(objects, "ClusterQueue").values() for g in q["spec"]["resourceGroups"]
                for f in g["flavors"]}
    assert referred <= {name for _, name in flavors}
    cohorts = {name for _, name in _of(objects, "Cohort")}
    assert {q["spec"]["cohortName"] for q in _of(objects, "ClusterQueue").values()} == cohorts


@pytest.mark.parametrize("which", ["shipped", "teams"])
def test_every_queue_has_its_priority_class_and_local_queue(which, request):
    catalog, objects = request.getfixturevalue(which)
    classes = _of(objects, "WorkloadPriorityClass")
    assert {name: o["value"] for (_, name), o in classes.items()} == {
        priority_class_name(q): q.priority for q in catalog.queues}
    local = _of(objects, "LocalQueue")
    expected = {(f"hetero-{t.name}", local_queue_name(q)): f"hetero-{t.name}"
                for t in catalog.tenants for q in catalog.queues if t.allows_queue(q.name)}
    assert {key: o["spec"]["clusterQueue"] for key, o in local.items()} == expected


def test_a_queues_kueue_queue_names_its_local_queues(teams):
    catalog, objects = teams
    assert catalog.queue("training").kueue_queue == "team-training"
    local = _of(objects, "LocalQueue")
    # The pods of the training queue carry kueue.x-k8s.io/queue-name=team-training in their tenant's namespace.
    assert {key for key in local if key[1] == "team-training"} == {("hetero-nlp", "team-training"),
                                                                   ("hetero-vision", "team-training")}
    assert {key[1] for key in local if key[0] == "hetero-nlp"} == {"batch", "team-training"}


@pytest.mark.parametrize("flavor, resource, labels, unexpressed", [
    pytest.param("ascend-910b", "huawei.com/Ascend910", {"accelerator": "huawei-Ascend910"}, "the chip only",
                 id="ascend 910B: the plugin's chip label"),
    pytest.param("ascend-310p", "huawei.com/Ascend310P", {"accelerator": "huawei-Ascend310P"}, None,
                 id="ascend 310P: exact"),
    pytest.param("a100-80g", "nvidia.com/gpu", None, "device memory >= 76Gi", id="nvidia: model prefixes and memory"),
    pytest.param("amd-mi300", "amd.com/gpu", None, "prefixes of the product name", id="amd"),
    pytest.param("cpu-standard", None, None, None, id="cpu: nothing to select or tolerate"),
])
def test_a_flavors_node_labels_tolerations_and_what_labels_cannot_say(shipped, flavor, resource, labels, unexpressed):
    catalog, objects = shipped
    obj = _of(objects, "ResourceFlavor")[(None, f"hetero-{flavor}")]
    assert device_resource(catalog.flavor(flavor)) == resource
    assert obj["spec"].get("nodeLabels") == labels
    assert obj["spec"].get("tolerations") == (
        [{"key": resource, "operator": "Exists", "effect": "NoSchedule"}] if resource else None)
    note = obj["metadata"].get("annotations", {}).get(UNEXPRESSED_ANNOTATION)
    assert (note is None) if unexpressed is None else (unexpressed in note)


def test_selector_labels_and_arch_become_node_labels_where_exact():
    data = yaml.safe_load(DEFAULT_CATALOG_PATH.read_text(encoding="utf-8"))
    data["flavors"][0]["selector"].update(arch=["x86_64"], labels=[
        {"key": "hetero.jupyter.org/flavor", "operator": "In", "values": ["h100-80g"]},
        {"key": "example.com/pool", "operator": "Exists"}])
    data["flavors"][1]["selector"].update(arch=["x86_64", "aarch64"])
    objects = kueue_objects(parse_catalog(yaml.safe_dump(data, allow_unicode=True)))
    flavors = _of(objects, "ResourceFlavor")
    h100 = flavors[(None, "hetero-h100-80g")]
    assert h100["spec"]["nodeLabels"] == {"hetero.jupyter.org/flavor": "h100-80g", "kubernetes.io/arch": "amd64"}
    assert "label example.com/pool Exists" in h100["metadata"]["annotations"][UNEXPRESSED_ANNOTATION]
    assert "arch in amd64, arm64" in flavors[(None, "hetero-a100-80g")]["metadata"]["annotations"][UNEXPRESSED_ANNOTATION]
    assert all(crd_errors(o) == [] for o in objects)


def test_the_export_is_deterministic_and_ordered_for_apply(teams):
    catalog, objects = teams
    assert kueue_objects(catalog) == objects
    order = ["ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"]
    keys = [(order.index(o["kind"]), o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects]
    assert keys == sorted(keys)


def test_namespace_pattern(teams):
    catalog, _ = teams
    objects = kueue_objects(catalog, namespace="ml-{tenant}-jobs")
    assert {o["metadata"]["namespace"] for o in objects if o["kind"] == "LocalQueue"} == {"ml-nlp-jobs", "ml-vision-jobs"}
    with pytest.raises(ValueError, match="each tenant needs a namespace of its own"):
        kueue_objects(catalog, namespace="hetero")
    with pytest.raises(ValueError, match="not a DNS label"):
        kueue_objects(catalog, namespace="Team_{tenant}")


def hetero(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jupyter", "hetero", *args], capture_output=True, text=True, check=False,
                          timeout=120)


def test_cli_prints_the_objects(teams, tmp_path):
    _, objects = teams
    path = _team_catalog(tmp_path)
    result = hetero("export", "kueue", "--catalog", path)
    assert result.returncode == 0, result.stderr
    assert list(yaml.safe_load_all(result.stdout)) == objects


def test_cli_writes_one_file_per_kind(tmp_path):
    out = tmp_path / "kueue"
    result = hetero("export", "kueue", "--namespace", "ml-{tenant}", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "1-resourceflavors.yaml", "2-cohorts.yaml", "3-clusterqueues.yaml", "4-localqueues.yaml",
        "5-workloadpriorityclasses.yaml"]
    written = [o for p in sorted(out.iterdir()) for o in yaml.safe_load_all(p.read_text(encoding="utf-8"))]
    assert written == kueue_objects(load_catalog(DEFAULT_CATALOG_PATH), namespace="ml-{tenant}")
    assert {o["kind"] for o in yaml.safe_load_all((out / "3-clusterqueues.yaml").read_text())} == {"ClusterQueue"}
    assert "3-clusterqueues.yaml: 1 ClusterQueue" in result.stdout


def test_cli_reports_a_bad_namespace_or_catalog(tmp_path):
    result = hetero("export", "kueue", "--namespace", "Bad_{tenant}")
    assert result.returncode == 1 and "not a DNS label" in result.stderr
    result = hetero("export", "kueue", "--catalog", str(tmp_path / "missing.yaml"))
    assert result.returncode == 1 and "cannot read file" in result.stderr


def test_pods_of_a_kueue_queue_name_the_exported_local_queue_and_priority_class(tmp_path):
    from jupyter_hetero.catalog import load_catalog
    from jupyter_hetero.cli.k8s import render
    from jupyter_hetero.export.kueue import kueue_objects, pod_admission

    catalog = load_catalog(team_catalog(tmp_path, queues={"batch": {"kueue_queue": "vision-batch"}}))
    batch, experiment = catalog.queue("batch"), catalog.queue("experiment")
    assert pod_admission(experiment) == (None, None)  # this engine alone admits it
    queue_name, priority_class = pod_admission(batch)
    exported = kueue_objects(catalog)
    assert queue_name in {o["metadata"]["name"] for o in exported if o["kind"] == "LocalQueue"}
    assert priority_class in {o["metadata"]["name"] for o in exported if o["kind"] == "WorkloadPriorityClass"}
    [pod] = render(catalog, "data-preprocessing")  # its queue is batch: the backend's own factory
    assert pod["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == queue_name
    assert pod["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == priority_class


# -- what Kueue cannot say ---------------------------------------------------------------------------


def _gaps_of(tmp_path, **changes):
    catalog = load_catalog(team_catalog(tmp_path, **changes))
    export = kueue_export(catalog)
    assert export.objects == kueue_objects(catalog)  # the same objects, the rules beside them
    return export


def test_every_rule_kueue_cannot_say_is_returned_with_its_object(tmp_path):
    export = _gaps_of(tmp_path, queues={
        "inference": {"reserved": {"a100-80g": 2}, "lend_reserved": False, "max_wait_s": 600,
                      "failure": {"retries": 4, "backoff_s": 15, "backoff_factor": 3}},
        "training": {"borrowing": False}},
        nlp={"quotas": {"a100-80g": {"nominal": {"devices": 1, "cpu": 8, "memory": "8Gi"},
                                     "lending_limit": {"devices": 3}}}})
    by_rule = {gap.rule: gap for gap in export.unexpressed}
    assert by_rule["queue inference reserves 2 a100-80g, 2 ascend-310p, 1 t4 devices (never lent)"] == Unexpressed(
        "queue inference reserves 2 a100-80g, 2 ascend-310p, 1 t4 devices (never lent)",
        "WorkloadPriorityClass/hetero-inference", "Kueue has no capacity reserved for one queue; hetero enforces it")
    assert by_rule["queue inference escalates after a max wait of 600 s (allow-preemption)"].object == \
        "WorkloadPriorityClass/hetero-inference"
    assert "queue inference retries failed work 4 time(s), backoff 15 s x 3" in by_rule
    assert "queue training does not borrow from the cohort" in by_rule
    assert "queue training resumes retried work from its checkpoint" in by_rule
    assert "queue experiment's kernels are preempted only when idle" in by_rule
    assert "queue urgent may preempt only experiment, batch, training" in by_rule
    assert by_rule["tenant nlp lends more devices of a100-80g than its nominal quota"].object == "ClusterQueue/hetero-nlp"
    assert by_rule["flavor a100-80g selects nodes by device memory >= 76Gi"].object == "ResourceFlavor/hetero-a100-80g"
    # Each names an object of the export, in the export's order, and says it once.
    names = [f"{o['kind']}/{o['metadata']['name']}" for o in export.objects]
    assert all(gap.object in names for gap in export.unexpressed)
    assert [names.index(gap.object) for gap in export.unexpressed] == sorted(names.index(g.object) for g in export.unexpressed)
    assert len(by_rule) == len(export.unexpressed)
    assert str(by_rule["queue training does not borrow from the cohort"]).startswith(
        "not expressed in Kueue: queue training does not borrow from the cohort (")


def test_a_queue_without_those_rules_says_only_its_wait_bound(tmp_path):
    export = _gaps_of(tmp_path, queues={"experiment": {"preemption": {"idle_kernels_only": False}}})
    assert [gap.rule for gap in export.unexpressed if gap.object == "WorkloadPriorityClass/hetero-experiment"] == [
        "queue experiment escalates after a max wait of 1800 s (raise-priority +150)"]
    assert not any(gap.object.startswith("ClusterQueue/") for gap in export.unexpressed)


def test_cli_writes_each_rule_as_a_comment_above_its_object_and_warns_once(tmp_path):
    path = team_catalog(tmp_path, queues={"inference": {"reserved": {"a100-80g": 2}}})
    result = hetero("export", "kueue", "--catalog", path)
    assert result.returncode == 0, result.stderr
    gaps = kueue_export(load_catalog(path)).unexpressed
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [f"warning: {gap}" for gap in gaps]
    comment = "# not expressed in Kueue: queue inference reserves 2 a100-80g, 2 ascend-310p, 1 t4 devices (lent " \
              "while idle) (Kueue has no capacity reserved for one queue; hetero enforces it)"
    document = next(d for d in result.stdout.split("---\n") if "name: hetero-inference" in d)
    assert document.startswith("# not expressed in Kueue: ") and comment in document.splitlines()
    assert list(yaml.safe_load_all(result.stdout)) == kueue_objects(load_catalog(path))
    out = tmp_path / "kueue"
    result = hetero("export", "kueue", "--catalog", path, "-o", str(out))
    assert comment in (out / "5-workloadpriorityclasses.yaml").read_text(encoding="utf-8").splitlines()
    assert len([line for line in result.stderr.splitlines() if line.startswith("warning: ")]) == len(gaps)
