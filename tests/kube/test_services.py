"""An online service on the Kubernetes backend: its replicas as pods on the node the engine chose, each listening on
the same port at its own pod's address, reached by the endpoint at their pod IPs, and named in the cluster by a
Service selecting them, which goes with the service.

The cluster is the tests' wire-level fake API server with its local kubelet, which gives every pod an address of
its own on the loopback network; the server is a real jupyter-server on the kubernetes backend."""

from __future__ import annotations

from ..harness import until_async
from .fixtures import kube_api  # noqa: F401 - a fixture
from .selectors import label_selector
from .service_checks import MODEL, assert_each_replica_answers_in_turn, delete_and_see_it_go, ready_replicas
from .test_backend import GPU_NODE, NAMESPACE, cluster, namespace  # noqa: F401 - fixtures among them

SERVICE_LABEL = "hetero.jupyter.org/service"


async def test_a_services_replicas_are_pods_reached_at_their_own_addresses_and_named_by_a_service(
        cluster, api, jp_fetch, wait_for):  # noqa: F811 - the imported fixtures
    await api("services", "POST", {"name": "doubler", "command": MODEL, "replicas": 2,
                                   "parameters": {"devices": 1}})

    replicas = await ready_replicas(api)
    pods = [cluster.pod_of(replica["id"]) for replica in replicas]
    # The same port in every pod, each pod at its own address: the endpoint reaches each at its pod's IP.
    assert {replica["port"] for replica in replicas} == {8080}
    assert sorted(replica["address"] for replica in replicas) == sorted(pod["status"]["podIP"] for pod in pods)
    assert len({replica["address"] for replica in replicas}) == 2
    for pod in pods:
        assert pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"][0]["matchFields"][0]["values"] == [GPU_NODE]
        labels = pod["metadata"]["labels"]
        assert (labels["hetero.jupyter.org/kind"], labels[SERVICE_LABEL], labels["hetero.jupyter.org/revision"]) \
            == ("service", "doubler", "1")
        [container] = pod["spec"]["containers"]
        assert container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
        assert container["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
        assert {"name": "HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in container["env"]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"

    await assert_each_replica_answers_in_turn(jp_fetch, replicas)

    # Its name in the cluster: a Service on port 80 selecting its replicas (of every revision).
    named = await until_async(lambda: cluster.api.get("Service", "hetero-doubler", NAMESPACE),
                              "the service's Service", timeout=30)
    assert named["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]
    assert named["spec"]["clusterIP"] and named["spec"]["clusterIP"] != "None"
    selects = label_selector(",".join(f"{key}={value}" for key, value in named["spec"]["selector"].items()))
    assert sorted(pod["metadata"]["name"] for pod in cluster.pods() if selects(pod)) == \
        sorted(pod["metadata"]["name"] for pod in pods)

    await delete_and_see_it_go(api, wait_for, replicas,
                               pod_gone=lambda workload_id: cluster.pod_of(workload_id) is None,
                               service_gone=lambda: cluster.api.get("Service", "hetero-doubler", NAMESPACE) is None)
