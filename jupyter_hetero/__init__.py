"""jupyter-hetero: self-service heterogeneous AI compute (CPU, GPU, NPU) from inside Jupyter."""

from .__about__ import __version__

__all__ = ["__version__"]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-hetero"}]


def load_ipython_extension(ipython) -> None:
    """``%load_ext jupyter_hetero``: the ``%hetero_*`` magics."""
    from .notebook.magics import load_ipython_extension as load

    load(ipython)


def _jupyter_server_extension_points() -> list[dict[str, object]]:
    from .app import HeteroApp

    return [{"module": "jupyter_hetero", "app": HeteroApp}]
