"""Tenant profiles: by value from the catalog, and through KubeSpawner itself (offline) against a real
hetero server for the live capacity, ETA and quota use."""

from __future__ import annotations

import ast
import asyncio
import time

import pytest
import yaml
from tornado import web

from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.hub import pre_spawn_hook, profile_list
from jupyter_hetero.hub.config import hub_config
from jupyter_hetero.hub.profiles import FlavorLive, Live, build_profiles

from ..builders import TOKENS, team_catalog
from ..fakes import HubUser

kubespawner = pytest.importorskip("kubespawner")
kubernetes_validate = pytest.importorskip("kubernetes_validate")

# nlp without any accelerator quota: a tenant with no GPU access.
CPU_ONLY_NLP = {"nlp": {"quotas": {"cpu-standard": {"nominal": {"cpu": 64, "memory": "512Gi"}}}}}


@pytest.fixture
def fake_kubeconfig(monkeypatch):
    """KubeSpawner loads a kube config and makes an API client when it is made; offline there is no cluster,
    and nothing these tests do calls one (building the pod is pure)."""
    monkeypatch.setattr("kubespawner.spawner.load_config", lambda **_: None)
    monkeypatch.setattr("kubespawner.spawner.shared_client", lambda *_, **__: None)


@pytest.fixture
def hub_settings(jp_http_port, jp_base_url, hetero_config):
    """The hub's configuration: the test's hetero server as the service, its catalog."""
    from traitlets.config import Config

    config = Config()
    config.HeteroHub.service_url = f"http://localhost:{jp_http_port}{jp_base_url}"
    config.HeteroHub.catalog_file = hetero_config["catalog_file"]
    return config


class _Page:
    """The spawn page's request as a spawner's ``handler`` carries it: only its Accept-Language matters here."""

    def __init__(self, accept_language: str):
        self.request = type("Request", (), {"headers": {"Accept-Language": accept_language}})()


def as_sent(pod) -> dict:
    """The pod as KubeSpawner sends it (its models are kubernetes_asyncio's)."""
    from kubernetes_asyncio.client import ApiClient

    return ApiClient().sanitize_for_serialization(pod)


def spawner_for(config, name: str, groups=(), cls=None, **options):
    cls = cls or kubespawner.KubeSpawner
    user = HubUser(name, groups, TOKENS)
    spawner = cls(_mock=True, user=user, config=config, profile_list=profile_list, **options)
    return spawner


# --- by value ----------------------------------------------------------------------------------


def test_team_tenants_get_their_flavors_by_value(tmp_path):
    catalog = load_catalog(team_catalog(tmp_path, **CPU_ONLY_NLP))
    vision = build_profiles(catalog, catalog.tenant("vision"))
    nlp = build_profiles(catalog, catalog.tenant("nlp"))
    assert [p["slug"] for p in vision] == [
        "data-preprocessing--cpu-standard", "fine-tuning--a100-80g", "vision--t4",
        "interactive--cpu-standard", "interactive--t4", "interactive--a100-80g"]
    assert [p["slug"] for p in nlp] == ["data-preprocessing--cpu-standard", "interactive--cpu-standard"]
    a100 = next(p for p in vision if p["slug"] == "interactive--a100-80g")
    override = a100["kubespawner_override"]
    assert override["extra_resource_limits"] == override["extra_resource_guarantees"] == {"nvidia.com/gpu": "1"}
    assert override["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert override["cpu_guarantee"] == override["cpu_limit"] == 2
    assert override["mem_limit"] == 8 * 2**30
    assert override["image"] == catalog.template("interactive").variant_for(catalog.flavor("a100-80g").family).image
    assert override["extra_labels"]["hetero.jupyter.org/tenant"] == "vision"
    assert a100["hetero"] == {"tenant": "vision", "template": "interactive", "flavor": "a100-80g",
                              "queue": "experiment", "parameters": {"devices": 1},
                              "request": a100["hetero"]["request"], "over_quota": False}
    assert vision[0]["default"] is True and sum(bool(p.get("default")) for p in vision) == 1
    cpu = next(p for p in nlp if p["slug"] == "interactive--cpu-standard")["kubespawner_override"]
    assert "extra_resource_limits" not in cpu and "tolerations" not in cpu


def test_shipped_catalog_default_tenant_in_both_languages():
    catalog = load_catalog(DEFAULT_CATALOG_PATH)
    tenant = catalog.tenant(catalog.default_tenant)
    english, chinese = build_profiles(catalog, tenant), build_profiles(catalog, tenant, language="zh")
    assert [p["slug"] for p in english] == [p["slug"] for p in chinese]
    assert {"interactive--ascend-910b", "interactive--cpu-standard"} <= {p["slug"] for p in english}
    ascend = next(p for p in english if p["slug"] == "interactive--ascend-910b")
    assert ascend["kubespawner_override"]["extra_resource_limits"] == {"huawei.com/Ascend910": "1"}
    assert next(p for p in chinese if p["slug"] == "interactive--ascend-910b")["display_name"] == "交互式笔记本 · 昇腾 910B"
    assert "live capacity unavailable" in ascend["description"]


def test_live_numbers_and_quota_shape_descriptions(tmp_path):
    catalog = load_catalog(team_catalog(tmp_path))
    used = {"cpu_milli": 8000, "memory_mib": 65536, "device_milli": 1000}
    live = Live(
        flavors={("interactive", "t4"): FlavorLive(devices_total=4, devices_free=3, cpu_free=40, starts_now=False,
                                                   eta_s=600)},
        quota={"a100-80g": {"flavor": "a100-80g", "nominal": {"cpu_milli": 128000, "memory_mib": 2**20, "device_milli": 1000},
                            "borrowing_limit": {"cpu_milli": 0, "memory_mib": 0, "device_milli": 0}, "used": used}},
    )
    profiles = build_profiles(catalog, catalog.tenant("vision"), live, language="zh")
    t4 = next(p for p in profiles if p["slug"] == "interactive--t4")
    assert "3/4 个设备空闲" in t4["description"] and "预计 10 分钟后启动" in t4["description"]
    over = [p["slug"] for p in profiles if p["hetero"]["over_quota"]]
    assert over == ["fine-tuning--a100-80g", "interactive--a100-80g"]
    assert profiles[-2:] == [p for p in profiles if p["hetero"]["over_quota"]]  # over quota last, never the default
    assert all("超出配额" in p["display_name"] for p in profiles[-2:])


# --- through KubeSpawner, against a real hetero server --------------------------------------------


@pytest.mark.team(**CPU_ONLY_NLP)
async def test_each_tenant_spawns_its_profile_pod(team, api, hub_settings, fake_kubeconfig):
    from jupyter_hetero.hub import HeteroKubeSpawner

    await api("nodes")  # the server is up and has its inventory
    alice = spawner_for(hub_settings, "alice", cls=HeteroKubeSpawner)
    form = await alice.get_options_form()
    assert 'value="interactive--a100-80g"' in form and "devices free" in form
    alice.user_options = alice.options_from_form({"profile": ["interactive--a100-80g"]})
    await pre_spawn_hook(alice)
    await alice.load_user_options()
    pod = await alice.get_pod_manifest()
    kubernetes_validate.validate(as_sent(pod), "1.35", strict=True)
    container = pod.spec.containers[0]
    catalog = load_catalog(hub_settings.HeteroHub.catalog_file)
    assert container.image == catalog.template("interactive").variant_for(catalog.flavor("a100-80g").family).image
    assert container.resources.limits["nvidia.com/gpu"] == "1"
    assert [t.key for t in pod.spec.tolerations if t.key == "nvidia.com/gpu"] == ["nvidia.com/gpu"]
    assert pod.metadata.labels["hetero.jupyter.org/flavor"] == "a100-80g"
    assert alice.hetero_profile["template"] == "interactive"
    assert alice.user.tokens_asked[0]["scopes"] == ["access:services!service=hetero"]

    bob = spawner_for(hub_settings, "bob", ("nlp-team",), cls=HeteroKubeSpawner)
    form = await bob.get_options_form()
    assert "a100" not in form and 'value="interactive--cpu-standard"' in form
    bob.user_options = bob.options_from_form({"profile": ["interactive--cpu-standard"]})
    await bob.load_user_options()
    pod = await bob.get_pod_manifest()
    limits = pod.spec.containers[0].resources.limits
    assert not any("/" in key for key in limits) and float(limits["cpu"]) == 2
    assert pod.metadata.labels["hetero.jupyter.org/tenant"] == "nlp"

    # A forged GPU choice: refused with a readable 403 before KubeSpawner would see it.
    bob.user_options = {"profile": "interactive--a100-80g"}
    with pytest.raises(web.HTTPError) as refused:
        await pre_spawn_hook(bob)
    assert refused.value.status_code == 403 and "tenant nlp" in refused.value.jupyterhub_message
    with pytest.raises(ValueError, match="No such profile"):
        await bob.load_user_options()


@pytest.mark.team(**CPU_ONLY_NLP)
async def test_placement_pins_the_pod_to_the_placed_node(team, api, hub_settings, fake_kubeconfig):
    from jupyter_hetero.hub import HeteroKubeSpawner

    class Placed(HeteroKubeSpawner):
        async def placement(self):
            return {"node": "gpu-a100-0"}

    assert await spawner_for(hub_settings, "bob", cls=HeteroKubeSpawner).placement() is None  # not placed yet
    alice = spawner_for(hub_settings, "alice", cls=Placed)
    alice.user_options = {"profile": "interactive--a100-80g"}
    await alice.load_user_options()
    pod = as_sent(await alice.get_pod_manifest())
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-a100-0"]}]}]


async def test_the_kube_spawner_has_the_service_place_its_server_and_pins_the_pod_there(
        team, api, hub_settings, fake_kubeconfig):
    from jupyter_hetero.hub import HeteroKubeSpawner

    alice = spawner_for(hub_settings, "alice", cls=HeteroKubeSpawner)
    alice.user_options = {"profile": "interactive--a100-80g"}
    await alice.load_user_options()
    workload = (await alice.hetero_place())["workload"]  # what start() does before KubeSpawner's own start
    assert (workload["kind"], workload["state"], workload["user"], workload["flavor"]) == (
        "server", "running", "alice", "a100-80g")
    placed = await alice.placement()
    assert placed == {"node": "gpu-a100-0", "devices": [d["index"] for d in workload["placement"]["slots"][0]["devices"]]}
    pod = as_sent(await alice.get_pod_manifest())
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert all({"key": "metadata.name", "operator": "In", "values": ["gpu-a100-0"]} in t["matchFields"] for t in terms)
    env = {item["name"]: item.get("value") for item in pod["spec"]["containers"][0]["env"]}
    assert env["HETERO_WORKLOAD_ID"] == str(workload["id"])
    await alice.hetero_stop(lambda now: asyncio.sleep(0), now=False)  # KubeSpawner's stop needs a cluster
    assert (await api(f"workloads/{workload['id']}", as_user="alice"))["state"] == "succeeded"


async def test_a_server_the_service_refuses_fails_its_start_with_the_services_reason(
        team, api, hub_settings, fake_kubeconfig):
    from jupyter_hetero.hub import HeteroKubeSpawner
    from jupyter_hetero.hub.placement import ServerNotPlaced

    bob = spawner_for(hub_settings, "bob", cls=HeteroKubeSpawner)
    # A forged choice: nlp may start no A100 server of a template that runs no kernels.
    bob.hetero_profile = {"template": "training", "flavor": "a100-80g", "parameters": {}, "queue": None}
    with pytest.raises(ServerNotPlaced, match="template training does not run servers"):
        await bob.hetero_place()
    assert bob.hetero_workload is None
    assert await api("workloads", as_user="bob", kind="server") == []


async def test_a_server_not_placed_within_start_timeout_fails_and_gives_up_its_place(
        team, api, hub_settings, fake_kubeconfig):
    from jupyter_hetero.hub import HeteroKubeSpawner
    from jupyter_hetero.hub.placement import ServerNotPlaced

    holder = spawner_for(hub_settings, "alice", cls=HeteroKubeSpawner)
    holder.hetero_profile = {"template": "interactive", "flavor": "a100-80g", "parameters": {"devices": 1}}
    await holder.hetero_place()  # vision's one A100
    waiter = spawner_for(hub_settings, "carol", cls=HeteroKubeSpawner, start_timeout=2)
    waiter.hetero_profile = dict(holder.hetero_profile)
    launched = []
    with pytest.raises(ServerNotPlaced, match="not placed within 2 s: Waiting in queue experiment"):
        await waiter.hetero_start(lambda: launched.append(True))
    assert launched == [] and waiter.hetero_workload is None
    (gave_up,) = await api("workloads", as_user="carol", kind="server", mine="true")
    assert gave_up["state"] == "cancelled", gave_up
    await holder.hetero_release()


async def test_over_quota_profile_is_shown_last_and_refused(team, api, hub_settings, fake_kubeconfig):
    job = await api("workloads", "POST", {"kind": "job", "template": "fine-tuning",
                                          "command": ["python", "-c", "import time; time.sleep(60)"]}, as_user="alice")
    deadline = time.monotonic() + 30
    while (await api(f"workloads/{job['id']}", as_user="alice"))["state"] not in ("admitted", "starting", "running"):
        assert time.monotonic() < deadline, "the job never started"
        await asyncio.sleep(0.1)
    # The preview and quota answers follow the scheduler's last cycle.
    deadline = time.monotonic() + 30
    while True:
        alice = spawner_for(hub_settings, "alice")
        profiles = await profile_list(alice)
        a100 = next(p for p in profiles if p["slug"] == "interactive--a100-80g")
        if a100["hetero"]["over_quota"] or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    assert a100["hetero"]["over_quota"] and profiles[-1]["hetero"]["over_quota"]
    cpu = next(p for p in profiles if p["slug"] == "interactive--cpu-standard")
    assert "cores free" in cpu["description"] and "starts now" in cpu["description"]
    alice.user_options = {"profile": "interactive--a100-80g"}
    with pytest.raises(web.HTTPError) as refused:
        await pre_spawn_hook(alice)
    assert "over tenant vision's quota" in refused.value.jupyterhub_message
    await api(f"workloads/{job['id']}", "DELETE", as_user="alice")


async def test_a_user_in_no_tenant_is_refused(team, api, hub_settings, fake_kubeconfig):
    stranger = spawner_for(hub_settings, "mallory")
    with pytest.raises(web.HTTPError) as refused:
        await profile_list(stranger)
    assert refused.value.status_code == 403 and "belongs to no tenant" in refused.value.jupyterhub_message


# --- hub-config ---------------------------------------------------------------------------------


def test_hub_config_fragment_compiles_and_z2jh_loads(capsys):
    from jupyter_hetero.cli.main import main

    assert main(["hub-config"]) == 0
    fragment = capsys.readouterr().out
    assert fragment == hub_config()
    compile(fragment, "jupyterhub_config.py", "exec")
    assert "HeteroKubeSpawner" in fragment
    assert '"command": [sys.executable, "-m", "jupyter_hetero.cli", "service", *(["--allow-root"] if os.geteuid() == 0 else [])]' in fragment
    names = {node.attr for node in ast.walk(ast.parse(fragment)) if isinstance(node, ast.Attribute)}
    assert {"profile_list", "pre_spawn_hook", "services", "load_roles", "server_token_scopes",
            "extra_user_scopes"} <= names
    assert main(["hub-config", "--z2jh", "--port", "10202"]) == 0
    values = yaml.safe_load(capsys.readouterr().out)
    hub = values["hub"]
    compile(hub["extraConfig"]["hetero"], "extraConfig", "exec")
    assert "read:services!service=hetero" in hub["extraConfig"]["hetero"]
    assert hub["services"]["hetero"] == {"url": "http://hub:10202", "command": ["jupyter", "hetero", "service"],
                                         "oauth_no_confirm": True}
    assert hub["loadRoles"]["hetero-service"]["scopes"] == ["list:users", "read:users", "read:groups", "servers"]
    assert hub["service"]["extraPorts"] == [{"name": "hetero", "port": 10202, "targetPort": 10202}]


@pytest.mark.team(**CPU_ONLY_NLP)
async def test_local_spawner_form_offers_the_same_choices(team, api, hub_settings, fake_kubeconfig):
    from jupyterhub.spawner import LocalProcessSpawner

    from jupyter_hetero.hub import options_form, options_from_form

    bob = LocalProcessSpawner(user=HubUser("bob", ("nlp-team",), TOKENS), config=hub_settings,
                              options_form=options_form, options_from_form=options_from_form)
    bob.handler = _Page("zh-CN,zh;q=0.9,en;q=0.5")  # the spawn page's request, as the hub sets it
    form = await bob.get_options_form()
    assert "交互式笔记本 · CPU" in form and "核空闲" in form
    kube = spawner_for(hub_settings, "bob", ("nlp-team",))
    assert [p["slug"] for p in await profile_list(kube)] == [
        "data-preprocessing--cpu-standard", "interactive--cpu-standard"]
    assert form.count('type="radio"') == 2 and 'value="interactive--cpu-standard"' in form
    assert bob.options_from_form({"profile": ["interactive--cpu-standard"]}) == {"profile": "interactive--cpu-standard"}


async def test_without_the_service_profiles_are_listed_without_live_numbers(tmp_path, fake_kubeconfig):
    import socket

    from traitlets.config import Config

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = Config()
    config.HeteroHub.service_url = f"http://127.0.0.1:{port}/"
    config.HeteroHub.catalog_file = team_catalog(tmp_path)
    alice = spawner_for(config, "alice")
    profiles = await profile_list(alice)
    assert profiles and all("live capacity unavailable" in p["description"] for p in profiles)
    alice.user_options = {"profile": "interactive--a100-80g"}
    await pre_spawn_hook(alice)  # nothing known to be over quota: the admission decides


async def test_hub_config_fragment_configures_jupyterhub_and_the_spawner(tmp_path, fake_kubeconfig):
    from jupyterhub.app import JupyterHub

    from jupyter_hetero.hub import HeteroKubeSpawner

    path = tmp_path / "jupyterhub_config.py"
    path.write_text(hub_config())
    hub = JupyterHub()
    hub.load_config_file(str(path))
    assert hub.spawner_class is HeteroKubeSpawner
    assert hub.extra_user_scopes == {"access:services!service=hetero", "read:services!service=hetero"}
    assert [s["name"] for s in hub.services] == ["hetero"] and hub.load_roles[0]["services"] == ["hetero"]
    spawner = hub.spawner_class(_mock=True, config=hub.config)
    assert spawner.profile_list is profile_list and spawner.pre_spawn_hook is pre_spawn_hook
    assert {"access:servers!server", "read:services!service=hetero"} <= set(spawner.server_token_scopes)


def test_hub_config_for_one_machine_configures_the_local_spawner(tmp_path):
    from jupyterhub.app import JupyterHub

    from jupyter_hetero.hub import HeteroLocalSpawner, options_form, options_from_form

    path = tmp_path / "jupyterhub_config.py"
    path.write_text(hub_config(local=True))
    hub = JupyterHub()
    hub.load_config_file(str(path))
    assert hub.spawner_class is HeteroLocalSpawner
    spawner = hub.spawner_class(config=hub.config)
    assert spawner.options_form is options_form and spawner.options_from_form is options_from_form
    assert spawner.pre_spawn_hook is pre_spawn_hook
    assert spawner.environment["JUPYTER_HETERO_SERVICE_URL"] == "http://127.0.0.1:10101/services/hetero/"
    assert "KubeSpawner" not in path.read_text()
