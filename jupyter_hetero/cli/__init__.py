"""The `jupyter hetero` command line: inventory, catalog, workloads, kernelspecs, simulations and benchmarks."""

from .main import main

__all__ = ["main"]
