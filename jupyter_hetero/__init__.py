"""jupyter-hetero: self-service heterogeneous AI compute (CPU, GPU, NPU) from inside Jupyter."""

from .__about__ import __version__

__all__ = ["__version__"]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-hetero"}]


def _jupyter_server_extension_points() -> list[dict[str, object]]:
    from .app import HeteroApp

    return [{"module": "jupyter_hetero", "app": HeteroApp}]
