"""A Kubernetes cluster for the tests: a wire-level API server (``apiserver.FakeApiServer``) and a kubelet
that runs pods as local processes (``kubelet.LocalKubelet``); fixtures in ``fixtures.py``."""
