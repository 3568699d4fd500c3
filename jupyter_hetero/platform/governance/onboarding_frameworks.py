"""A runtime variant's frameworks, checked where the variant runs: in its image on Kubernetes (a short-lived pod),
in its environment on the local backend (the catalog's ``python:`` of the variant), or else in the server's own
environment, which the result says.

    probe = framework_probe(template, variant, runs_here=True)   # where, with which interpreter, what to import
    status, evidence = judge(probe, exit_code, log_text)         # ("passed" | "failed" | "skipped", words)

Pure: the checklist runs ``probe.code`` through the backend and hands back what it printed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from ...catalog import RuntimeVariant, Template
from ...packages import parse_requirement, unmet
from .onboarding_probes import FRAMEWORK_MODULES

__all__ = ["FrameworkProbe", "VERSIONS", "framework_probe", "judge"]

# Prints one line, "hetero-versions {...}": each framework's version (null when the module has none) or why it
# did not import. It never fails by itself: the server judges the versions against the catalog's requirements.
VERSIONS = """
import importlib, importlib.metadata, json
found, missing = {{}}, {{}}
for name, module_name in {pairs!r}:
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        missing[name] = type(exc).__name__ + ": " + str(exc)
        continue
    version = getattr(module, "__version__", None)
    if not isinstance(version, str):
        try:
            version = importlib.metadata.version(name)
        except Exception:
            version = None
    found[name] = version
print("hetero-versions " + json.dumps({{"found": found, "missing": missing}}, sort_keys=True))
"""
_MARK = "hetero-versions "


@dataclass(frozen=True)
class FrameworkProbe:
    """What a variant's framework check runs, and where."""

    variant: str  # "training/nvidia"
    where: Literal["image", "environment", "server"]
    image: str
    python: str | None  # the interpreter to run on the local backend; None: the image's "python" or the server's
    requirements: tuple[str, ...]  # "pytorch", "torch>=2.3", ...
    code: str

    @property
    def place(self) -> str:
        """Where it ran, in words."""
        if self.where == "image":
            return f"in image {self.image}"
        if self.where == "environment":
            return f"in the environment of {self.python}"
        return (f"ran in the server's environment: the catalog names no environment for variant {self.variant} "
                f"(its python:)")


def framework_probe(template: Template, variant: RuntimeVariant, *, runs_here: bool) -> FrameworkProbe:
    """The check of ``variant``'s frameworks (its own, and what it and its template require of the environment)."""
    requirements = tuple(dict.fromkeys([*variant.frameworks, *template.frameworks, *variant.requires]))
    names = dict.fromkeys(parse_requirement(text)[0] for text in requirements)
    pairs = [(name, FRAMEWORK_MODULES.get(name, name.replace("-", "_"))) for name in names]
    where = "image" if not runs_here else "environment" if variant.python else "server"
    return FrameworkProbe(variant=f"{template.name}/{variant.family.value}", where=where, image=variant.image,
                          python=variant.python if where == "environment" else None, requirements=requirements,
                          code=VERSIONS.format(pairs=pairs))


def judge(probe: FrameworkProbe, exit_code: int | None, log_text: str) -> tuple[str, str]:
    """``passed`` when every requirement is met where it ran; ``skipped`` when only the server's environment stood
    in and lacks them (it is not the variant's); ``failed`` otherwise. Evidence names the place and the versions."""
    line = next((line for line in reversed(log_text.splitlines()) if line.startswith(_MARK)), None)
    if line is None:
        tail = " | ".join(text for text in log_text.splitlines() if text.strip())[-300:]
        return "failed", f"{probe.place}: no versions reported (exit code {exit_code}){': ' + tail if tail else ''}"
    reported = json.loads(line.removeprefix(_MARK))
    found: dict[str, str | None] = reported["found"]
    missing: dict[str, str] = reported["missing"]
    versions = ", ".join(f"{name} {version or '(no version)'}" for name, version in sorted(found.items()))
    declared = frozenset(f"{name} {version}" if version else name for name, version in found.items())
    problems = [f"cannot import {name} ({why})" for name, why in sorted(missing.items())]
    problems += [f"{have} does not meet {text}" for text in probe.requirements
                 if parse_requirement(text)[0] in found and (have := _unmet_one(text, declared))]
    if not problems:
        return "passed", f"{probe.place}: {versions or 'no frameworks to import'}"
    if probe.where == "server":
        lacking = sorted({*missing, *(parse_requirement(t)[0] for t in probe.requirements
                                      if parse_requirement(t)[0] in found and _unmet_one(t, declared))})
        return "skipped", (f"the variant's environment to import {', '.join(lacking)}: {probe.place}, which lacks "
                           f"them ({'; '.join(problems)})")
    return "failed", f"{probe.place}: {'; '.join(problems)}{' (imported: ' + versions + ')' if versions else ''}"


def _unmet_one(requirement: str, declared: frozenset[str]) -> str | None:
    found = unmet((requirement,), declared)
    return found[1] if found else None
