"""jupyter-hetero: self-service heterogeneous AI compute (CPU, GPU, NPU) from inside Jupyter."""

from .__about__ import __version__

__all__ = ["__version__", "report"]


def report(figures=None, /, *, at=None, **named):
    """Report figures of this workload to its server: ``report(loss=0.31, step=120)`` (see notebook/report.py)."""
    from .notebook.report import report as send

    return send(figures, at=at, **named)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-hetero"}]


def load_ipython_extension(ipython) -> None:
    """``%load_ext jupyter_hetero``: the ``%hetero_*`` magics."""
    from .notebook.magics import load_ipython_extension as load

    load(ipython)


def _jupyter_server_extension_points() -> list[dict[str, object]]:
    from .app import HeteroApp

    return [{"module": "jupyter_hetero", "app": HeteroApp}]
