"""Backends: where workloads actually run (this machine, or Kubernetes)."""
