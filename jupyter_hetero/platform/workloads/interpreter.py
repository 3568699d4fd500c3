"""The submitter's Python: the interpreter ``python`` means in their job.

The CLI sends its own interpreter (``sys.executable``), the magics their kernel's; the job's PATH then starts with
that interpreter's folder, so ``python hello.py`` runs in the environment it was submitted from (a venv's or
conda's ``bin`` holds ``python``, ``pip`` and the environment's scripts):

    with_interpreter({"PATH": "/usr/bin"}, "/home/ann/.venv/bin/python")   # {"PATH": "/home/ann/.venv/bin:/usr/bin"}

The path is not resolved: a venv's ``python`` is a link to the base interpreter, and following it would leave the
venv. It is not required to exist on the server's machine either (a job in a pod has its image's Python); where it
does not, the PATH finds what it found before.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from ...errors import InvalidRequest
from ...i18n import N_, Message

__all__ = ["checked_interpreter", "with_interpreter"]


def checked_interpreter(python: str | None) -> str | None:
    """``python`` as a submission gives it, if it can name an interpreter: an absolute POSIX path (else a 400)."""
    if python is None:
        return None
    if not posixpath.isabs(python) or posixpath.basename(python) in ("", ".", ".."):
        raise InvalidRequest(Message(N_("python: {path!r} is not an absolute path to an interpreter"), path=python),
                             field="python")
    return posixpath.normpath(python)


def with_interpreter(env: Mapping[str, str], python: str | None) -> dict[str, str]:
    """``env`` with ``python``'s folder first on its PATH (unchanged without one)."""
    if not python:
        return dict(env)
    folder = posixpath.dirname(python)
    rest = [entry for entry in env.get("PATH", "").split(":") if entry and entry != folder]
    return {**env, "PATH": ":".join([folder, *rest])}
