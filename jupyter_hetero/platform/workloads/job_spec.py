"""What a job runs, where and with which Python: the spec stored with the workload, built from the request and
checked against the submitter's own root (the server's, or on the hub service their home).

    specs = JobSpecs(root_dir, user_root_template="/home/{username}")
    spec = specs.build(body, specs.root_of(identity))   # {"payload", "env", "cwd", "python"?, and what it runs}

Every path a request names (``cwd``, ``script.path``, ``notebook.path``) is resolved inside that root, links and
``..`` included, or refused with a 400 naming the field; nothing is written here.
"""

from __future__ import annotations

import ast
import json
import keyword
from pathlib import Path
from typing import Any

from ...errors import InvalidRequest
from ...i18n import N_, Message
from ...models import SubmitWorkload
from ...units import parse_duration_s
from ..identity import Identity
from .environment import VISIBILITY
from .interpreter import checked_interpreter

__all__ = ["JobSpecs", "duration_s"]

# Variables the scheduler owns: a job may not set them itself.
_RESERVED_ENV = {name for names in VISIBILITY.values() for name in names}


class JobSpecs:
    """Builds a job's spec from its request, inside the submitter's root."""

    def __init__(self, root_dir: Path, user_root_template: str = ""):
        self.root_dir = root_dir.resolve()
        # The hub service reads each user's files where their server keeps them ("/home/{username}").
        self.user_root_template = user_root_template

    def root_of(self, identity: Identity) -> Path:
        """Where the submitter's files are: the server's root, or (the hub service) their own."""
        if not self.user_root_template:
            return self.root_dir
        if not identity.user or "/" in identity.user or identity.user.startswith("."):
            raise InvalidRequest(Message(N_("user name {user!r} cannot name a directory"), user=identity.user),
                                 field="user")
        return Path(self.user_root_template.replace("{username}", identity.user)).resolve()

    def _inside_root(self, relative: str, field: str, suffix: str | None = None, root: Path | None = None) -> Path:
        root = root or self.root_dir
        path = (root / relative).resolve()
        if not path.is_relative_to(root):
            raise InvalidRequest(Message(N_("{field}: {path!r} is outside the server's root directory"), field=field,
                                         path=relative), field=field)
        if suffix is not None:
            if path.suffix != suffix:
                raise InvalidRequest(Message(N_("{field}: {path!r} is not a {suffix} file"), field=field, path=relative,
                                             suffix=suffix), field=field)
            if not path.is_file():
                raise InvalidRequest(Message(N_("{field}: {path!r} does not exist"), field=field, path=relative),
                                     field=field)
        return path

    def build(self, body: SubmitWorkload, root: Path) -> dict[str, Any]:
        """The spec stored with the workload; the first 400 of what the request names wrong, naming its field."""
        for name in body.env:
            if not name.isidentifier():
                raise InvalidRequest(Message(N_("env: {name!r} is not a valid variable name"), name=name),
                                     field=f"env.{name}")
            if name in _RESERVED_ENV or name.startswith("HETERO_"):
                raise InvalidRequest(Message(N_("env: {name} is set by the scheduler for the job's placement"), name=name),
                                     field=f"env.{name}")
        if body.cwd:
            cwd = self._inside_root(body.cwd, "cwd", root=root)
            if not cwd.is_dir():
                raise InvalidRequest(Message(N_("cwd: {cwd!r} is not a directory"), cwd=body.cwd), field="cwd")
        else:  # the root; on the hub service a user who never started a server has none: the attempt's folder
            cwd = root if root.is_dir() else None
        spec: dict[str, Any] = {"payload": body.payload, "env": body.env, "cwd": str(cwd) if cwd else ""}
        if (python := checked_interpreter(body.python)) is not None:
            spec["python"] = python
        if body.command is not None:
            spec["command"] = body.command
        elif body.script is not None:
            spec["script"] = {"path": str(self._inside_root(body.script.path, "script.path", ".py", root)),
                              "args": body.script.args}
        elif body.code is not None:
            try:
                ast.parse(body.code)
            except SyntaxError as exc:
                raise InvalidRequest(Message(N_("code: syntax error on line {line}: {problem}"), line=exc.lineno,
                                             problem=exc.msg), field="code") from None
            spec["code"] = body.code
        else:
            path = self._inside_root(body.notebook.path, "notebook.path", ".ipynb", root)
            try:
                cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            except (ValueError, KeyError, OSError):
                raise InvalidRequest(Message(N_("notebook.path: {path!r} is not a readable notebook"),
                                             path=body.notebook.path), field="notebook.path") from None
            for name in body.notebook.parameters:
                # Each name becomes an assignment in the injected cell: a Python identifier, or code.
                if not name.isidentifier() or keyword.iskeyword(name):
                    raise InvalidRequest(Message(N_("notebook.parameters: {name!r} is not a Python variable name"),
                                                 name=name), field=f"notebook.parameters.{name}")
            try:
                json.dumps(body.notebook.parameters)
            except TypeError:
                raise InvalidRequest(Message(N_("notebook.parameters: values must be JSON")),
                                     field="notebook.parameters") from None
            spec["notebook"] = {"path": str(path), "parameters": body.notebook.parameters, "cells": len(cells)}
        return spec


def duration_s(value: Any, field: str) -> int | None:
    """A duration the request gave (``30m``, ``2h``, seconds) in seconds; a 400 naming ``field`` otherwise."""
    if value is None:
        return None
    try:
        return parse_duration_s(value)
    except ValueError as exc:
        raise InvalidRequest(Message(N_("{field}: {problem}"), field=field, problem=exc), field=field) from None
