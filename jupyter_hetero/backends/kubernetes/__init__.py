"""The Kubernetes backend: the fleet's nodes as inventory, workloads as pods placed by this engine.

    quantities.py   Kubernetes quantity strings as milli-cores, MiB and counts
    nodes.py        a Node's labels, resources and taints as a capability record (and findings)
    objects.py      pure builders of the pods, secrets and services the backend creates
    reflector.py    list/watch caches of nodes, our pods and their events, off the event loop
    backend.py      the Backend protocol over those: create, watch and delete pods
"""
