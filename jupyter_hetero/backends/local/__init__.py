"""The local backend: this machine, discovered for real, plus emulated nodes for demos and tests."""

from .discovery import discover_local_node, load_emulated_nodes

__all__ = ["discover_local_node", "load_emulated_nodes"]
