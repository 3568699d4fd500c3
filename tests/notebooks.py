"""Real notebooks run by nbclient in a real kernel against a real server: what the magics' tests share."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

__all__ = ["output_text", "run_notebook"]


def run_notebook(base_url: str, token: str, folder: Path, *sources: str, errors: bool = False,
                 env: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """A notebook of ``sources`` after ``%load_ext jupyter_hetero``, run in ``folder`` by a kernel that reaches the
    server at ``base_url`` with ``token`` (and has ``env``); ``errors``: a failing cell does not stop it."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("%load_ext jupyter_hetero")]
    notebook.cells += [nbformat.v4.new_code_cell(source) for source in sources]
    # The kernel inherits this process's environment: set for the run, then put back as it was.
    variables = {"JUPYTER_HETERO_URL": base_url, "JUPYTER_HETERO_TOKEN": token, **(env or {})}
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=errors,
                       resources={"metadata": {"path": str(folder)}}).execute()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return notebook


def output_text(cell) -> str:
    """Everything a cell printed, displayed as text, or raised."""
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", ""))
        parts.append(output.get("data", {}).get("text/plain", ""))
        parts.append(output.get("evalue", ""))
    return "".join(parts)
