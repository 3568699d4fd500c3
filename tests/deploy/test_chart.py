"""The install a platform team applies: deploy/Containerfile and the Helm chart deploy/helm/jupyter-hetero.

The chart is linted and rendered by the real helm (scripts/kube-build.sh's), every rendered object is validated
against Kubernetes 1.34's schemas (strict: no unknown field), its RBAC is compared with the backend's rbac.yaml,
its server configuration is loaded by the traits it names, and every object is created with ``dryRun=All`` on a
real API server (validation and admission, Pod Security ``restricted`` included; nothing is kept).
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
from pathlib import Path

import kubernetes
import kubernetes_validate
import pytest
import yaml
from traitlets.config import Config

from jupyter_hetero.app import HeteroApp
from jupyter_hetero.backends.kubernetes import rbac
from jupyter_hetero.backends.kubernetes.config import KubernetesConfig
from tests.kube.cluster_fixtures import control_plane, kube_binaries  # noqa: F401 - fixtures

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "jupyter-hetero"
CONTAINERFILE = REPO / "deploy" / "Containerfile"
KUBE_VERSION = "1.34.0"
RELEASE, NAMESPACE = "hetero", "jupyter-hetero"

HUB = {"hub": {"enabled": True, "apiUrl": "http://hub.jhub.svc:8081/hub/api", "baseUrl": "/jhub/",
               "apiTokenSecret": {"name": "hetero-service-token"}, "userRootTemplate": "/home/{username}"}}
PER_TENANT = {"kubernetes": {"namespace": "hetero-{tenant}"}, "workloadNamespaces": ["hetero-vision", "hetero-nlp"],
              "workVolume": {"workloadClaim": "hetero-work"},
              "catalog": (REPO / "jupyter_hetero" / "catalog" / "default_catalog.yaml").read_text()}
HOST_PATH = {"workVolume": {"hostPath": "/srv/hetero/work"}, "store": {"persistence": {"enabled": False},
             "dbUrlSecret": {"name": "hetero-db"}}}
VALUES = [
    pytest.param({}, id="default values"),
    pytest.param(HUB, id="hub service"),
    pytest.param(PER_TENANT, id="one namespace per tenant with a catalog"),
    pytest.param(HOST_PATH, id="hostPath work volume and a PostgreSQL URL from a Secret"),
]


@pytest.fixture(scope="module")
def helm(kube_binaries) -> Path:  # noqa: F811 - the imported fixture
    return kube_binaries / "helm"


def _helm(helm: Path, *args: str, values: dict, tmp_path: Path, check: bool = True) -> subprocess.CompletedProcess:
    values_file = tmp_path / "values.json"
    values_file.write_text(json.dumps(values))
    answer = subprocess.run([str(helm), *args, "-f", str(values_file)], capture_output=True, text=True, check=False)
    if check and answer.returncode != 0:
        pytest.fail(f"helm {shlex.join(args)} failed:\n{answer.stderr}", pytrace=False)
    return answer


def render(helm: Path, values: dict, tmp_path: Path, namespace: str = NAMESPACE) -> list[dict]:
    """The objects ``helm template`` makes of the chart with ``values``, released in ``namespace``."""
    answer = _helm(helm, "template", RELEASE, str(CHART), "--namespace", namespace, "--kube-version", KUBE_VERSION,
                   values=values, tmp_path=tmp_path)
    return [document for document in yaml.safe_load_all(answer.stdout) if document]


def one(objects: list[dict], kind: str) -> dict:
    [found] = [obj for obj in objects if obj["kind"] == kind]
    return found


def server_config(objects: list[dict]) -> dict:
    config_map = next(obj for obj in objects if obj["kind"] == "ConfigMap" and obj["metadata"]["name"].endswith("-config"))
    return json.loads(config_map["data"]["jupyter_server_config.json"])


@pytest.mark.parametrize("values", VALUES)
def test_helm_lint_passes(helm, values, tmp_path):
    answer = _helm(helm, "lint", "--strict", str(CHART), "--namespace", NAMESPACE, "--kube-version", KUBE_VERSION,
                   values=values, tmp_path=tmp_path)
    assert "0 chart(s) failed" in answer.stdout


@pytest.mark.parametrize("values", VALUES)
def test_rendered_objects_are_valid_kubernetes_1_34(helm, values, tmp_path):
    objects = render(helm, values, tmp_path)
    assert {obj["kind"] for obj in objects} >= {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                                                 "RoleBinding", "Service", "ConfigMap", "Deployment"}
    for obj in objects:
        # Raises ValidationError naming the field; strict: a misspelt or misplaced field is an error too.
        kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)


def _rules(documents: list[dict], kind: str) -> list[dict]:
    [rules] = {json.dumps(obj["rules"], sort_keys=True) for obj in documents if obj["kind"] == kind}
    return json.loads(rules)


@pytest.mark.parametrize("values", VALUES)
def test_rbac_grants_exactly_what_rbac_yaml_grants(helm, values, tmp_path):
    objects = render(helm, values, tmp_path)
    for kind in ("ClusterRole", "Role"):
        assert _rules(objects, kind) == _rules(rbac.documents(), kind), kind
    account = one(objects, "ServiceAccount")["metadata"]
    namespaces = values.get("workloadNamespaces") or [values.get("kubernetes", {}).get("namespace", "hetero")]
    roles = sorted(obj["metadata"]["namespace"] for obj in objects if obj["kind"] == "Role")
    assert roles == sorted(namespaces)
    for binding in (obj for obj in objects if obj["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["name"], "namespace": NAMESPACE}]
    assert one(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == account["name"]


@pytest.mark.parametrize("values", VALUES)
def test_server_config_names_only_real_traits(helm, values, tmp_path):
    config = server_config(render(helm, values, tmp_path))
    assert set(config) == {"HeteroApp", "KubernetesConfig"}
    for cls, section in ((HeteroApp, "HeteroApp"), (KubernetesConfig, "KubernetesConfig")):
        unknown = set(config[section]) - set(cls.class_trait_names(config=True))
        assert not unknown, f"{section} has no traits {unknown}"
    # Loaded as jupyter_server loads jupyter_server_config.json: each value passes its trait's validation.
    loaded = KubernetesConfig(config=Config(config))
    for name, value in config["KubernetesConfig"].items():
        assert getattr(loaded, name) == value, name
    assert config["HeteroApp"]["backend"] == "kubernetes"
    assert not loaded.kubeconfig, "in a pod the backend must use the in-cluster service account"


def test_work_volume_reaches_pods_and_server_alike(helm, tmp_path):
    objects = render(helm, {}, tmp_path)
    config = server_config(objects)
    spec = one(objects, "Deployment")["spec"]["template"]["spec"]
    claim = next(volume for volume in spec["volumes"] if volume["name"] == "work")["persistentVolumeClaim"]["claimName"]
    assert config["KubernetesConfig"]["work_volume"] == {"claim": claim}
    claims = {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == "PersistentVolumeClaim"}
    assert claims[claim]["spec"]["accessModes"] == ["ReadWriteMany"]
    mount = next(m for m in spec["containers"][0]["volumeMounts"] if m["name"] == "work")
    assert mount["mountPath"] == config["HeteroApp"]["work_dir"], "pods mount the work directory at the server's path"


def test_probes_ask_the_port_the_service_targets(helm, tmp_path):
    objects = render(helm, {}, tmp_path)
    container = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    [port] = container["ports"]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["tcpSocket"] == {"port": port["name"]}, probe
    service_port = one(objects, "Service")["spec"]["ports"][0]
    assert service_port["targetPort"] == port["name"] and service_port["port"] == port["containerPort"]


def test_hub_mode_runs_the_service_as_an_external_hub_service(helm, tmp_path):
    objects = render(helm, HUB, tmp_path)
    container = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["python", "-m", "jupyter_hetero.cli", "service"]
    env = {item["name"]: item for item in container["env"]}
    assert env["JUPYTERHUB_API_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "hetero-service-token", "key": "token"}
    assert env["JUPYTERHUB_SERVICE_PREFIX"]["value"] == "/jhub/services/hetero/"
    assert env["JUPYTERHUB_SERVICE_URL"]["value"] == f"http://0.0.0.0:{container['ports'][0]['containerPort']}/jhub/services/hetero/"
    assert json.loads(env["JUPYTERHUB_OAUTH_ACCESS_SCOPES"]["value"]) == ["access:services!service=hetero"]
    assert "JUPYTER_TOKEN" not in env and not any(obj["kind"] == "Secret" for obj in objects)
    config = server_config(objects)
    assert config["HeteroApp"]["user_root_template"] == "/home/{username}"
    # Workload pods reach the API under the service's prefix.
    assert config["KubernetesConfig"]["server_url"] == "http://hetero-jupyter-hetero.jupyter-hetero.svc:8888/jhub/services/hetero/"


def test_no_credential_is_in_the_pod_spec(helm, tmp_path):
    objects = render(helm, HOST_PATH, tmp_path)
    container = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    env = {item["name"]: item for item in container["env"]}
    assert env["HETERO_DB_URL"]["valueFrom"]["secretKeyRef"]["name"] == "hetero-db"
    assert "--HeteroApp.db_url=$(HETERO_DB_URL)" in container["args"]
    assert "db_url" not in server_config(objects)["HeteroApp"]
    assert "valueFrom" in env["JUPYTER_TOKEN"]


@pytest.mark.parametrize("values, message", [
    pytest.param({"hub": {"enabled": True}}, "hub.enabled needs hub.apiUrl and hub.apiTokenSecret.name",
                 id="hub mode without the service's token"),
    pytest.param({"kubernetes": {"namespace": "hetero-{tenant}"}}, "list each tenant's namespace in workloadNamespaces",
                 id="one namespace per tenant, none listed"),
])
def test_values_that_cannot_work_are_refused(helm, values, message, tmp_path):
    answer = _helm(helm, "template", RELEASE, str(CHART), "--kube-version", KUBE_VERSION, values=values,
                   tmp_path=tmp_path, check=False)
    assert answer.returncode != 0 and message in answer.stderr


def _instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined and comments left out."""
    lines, current = [], ""
    for raw in path.read_text().splitlines():
        if not current and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        current += raw.rstrip().removesuffix("\\") + " "
        if not raw.rstrip().endswith("\\"):
            keyword, _, rest = current.strip().partition(" ")
            lines.append((keyword.upper(), rest.strip()))
            current = ""
    return lines


def _final_stage(path: Path) -> list[tuple[str, str]]:
    instructions = _instructions(path)
    last_from = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last_from:]


def _module_of(command: list[str]) -> str:
    assert command[:2] == ["python", "-m"], command
    return command[2]


def test_containerfile_runs_the_server_as_a_non_root_uid_on_the_charts_port(helm, tmp_path):
    stage = _final_stage(CONTAINERFILE)
    args = {value.split("=")[0]: value.split("=")[1] for keyword, value in _instructions(CONTAINERFILE)
            if keyword == "ARG" and "=" in value}
    [user] = [value for keyword, value in stage if keyword == "USER"]
    uid = user.split(":")[0].replace("${HETERO_UID}", args["HETERO_UID"])
    # Numeric, so that the kubelet can check runAsNonRoot without reading /etc/passwd in the image.
    assert uid.isdigit() and int(uid) != 0
    objects = render(helm, {}, tmp_path)
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == int(uid) and pod["securityContext"]["runAsNonRoot"] is True
    [exposed] = [value for keyword, value in stage if keyword == "EXPOSE"]
    assert int(exposed) == pod["containers"][0]["ports"][0]["containerPort"]
    [cmd] = [json.loads(value) for keyword, value in stage if keyword == "CMD"]
    assert f"--ServerApp.port={exposed}" in cmd
    hub_command = one(render(helm, HUB, tmp_path), "Deployment")["spec"]["template"]["spec"]["containers"][0]["command"]
    for module in (_module_of(cmd), _module_of(pod["containers"][0]["command"]), _module_of(hub_command)):
        assert importlib.util.find_spec(module) is not None, f"no module {module} to run"


def test_containerfile_copies_what_the_wheel_is_built_from():
    copied = [value.split() for keyword, value in _instructions(CONTAINERFILE)
              if keyword == "COPY" and not value.startswith("--from")]
    sources = {source for parts in copied for source in parts[:-1]}
    for source in sources:
        assert (REPO / source).exists(), f"COPY {source}: not in the repository"
    # The wheel build reads these (pyproject's hooks and shared-data); leaving one out breaks the image build.
    assert {"pyproject.toml", "hatch_build.py", "scripts/i18n.py", "jupyter_hetero", "labextension",
            "jupyter-config", "kernels", "README.md", "LICENSE"} <= sources


def _create_dry_run(api: kubernetes.client.ApiClient, obj: dict) -> None:
    kubernetes.utils.create_from_dict(api, obj, dry_run="All")


def test_the_chart_passes_a_real_api_servers_dry_run(control_plane, helm, tmp_path):  # noqa: F811
    """Every object of the chart (one namespace per tenant, the strictest case) and the server's pod itself,
    created with dryRun=All: validation, defaulting and admission, Pod Security ``restricted`` for the pod."""
    api = control_plane.api_client()
    core = kubernetes.client.CoreV1Api(api)
    restricted = {"pod-security.kubernetes.io/enforce": "restricted"}
    # Namespaces of this test's own: the session's other fixtures make `hetero` and `jupyter-hetero`.
    release_namespace, workload_namespaces = "hetero-chart", ["hetero-chart-vision", "hetero-chart-nlp"]
    for name in (release_namespace, *workload_namespaces):
        core.create_namespace({"metadata": {"name": name, "labels": restricted}})
    renders = [render(helm, {**values, "workloadNamespaces": workload_namespaces}, tmp_path, release_namespace)
               for values in (PER_TENANT, HUB)]
    for objects in renders:
        for obj in objects:
            _create_dry_run(api, obj)
    # The ServiceAccount admission plugin refuses a pod whose account does not exist, even in a dry run: the
    # account is made for real (in this test's own namespace), after the dry runs that must not find it.
    kubernetes.utils.create_from_dict(api, one(renders[0], "ServiceAccount"))
    for objects in renders:
        template = one(objects, "Deployment")["spec"]["template"]
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {**template["metadata"], "name": "hetero-server", "namespace": release_namespace},
               "spec": template["spec"]}
        _create_dry_run(api, pod)
