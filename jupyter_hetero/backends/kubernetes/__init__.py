"""The Kubernetes backend: the fleet's nodes as inventory, workloads as pods placed by this engine.

    config.py        KubernetesConfig: how to reach the cluster, where pods go, what they carry
    quantities.py    Kubernetes quantity strings as milli-cores, MiB and counts
    accelerators.py  a node's device-plugin resources and vendor labels as one accelerator group
    nodes.py         a Node's labels, resources and taints as a capability record (and findings);
                     what a pod requests of its node
    pod_identity.py  pod names, labels and the workload annotation from a workload's identity
    devices.py       placed devices as the device plugin's extended resources
    objects.py       pure builders of the pods, secrets and services the backend creates
    factory.py       PodFactory: one launch's objects from the configuration and the placement
    pods.py          a pod's status in the scheduler's terms: alive, how it ended, why it is stuck
    reflector.py     a list/watch cache of one kind of object, kept by a worker thread
    cluster.py       ClusterReflector: nodes, our pods, their events, the pods we did not place
    backend.py       the Backend protocol over those: create, watch and delete pods, copy their logs;
                     made of its parts:
    api_calls.py       creates and deletes, the API server's failures read into the backend's terms
    pod_lifecycle.py   what every pod shares: cache lookups, credential Secret, deletion, log copy
    replicas.py        replicas' pods: launch, liveness, stop, how each ended
    kernel_pods.py     kernels' pods and their connection Secrets
    endpoints.py       services' Services and replicas' addresses
    node_inventory.py  the nodes as the inventory; where device exporters are read
    kueue_admission.py Kueue's API required at start, its word on the pods it holds
    exporters.py     device exporters' Prometheus text (DCGM, npu-exporter, AMD) as each pod's device use
    telemetry.py     ExporterScraper: the configured exporters read every interval into the pods' samples
    rbac.py          rbac.yaml (the server's ServiceAccount and roles) read as the permissions it grants

See docs/kubernetes.md.
"""
