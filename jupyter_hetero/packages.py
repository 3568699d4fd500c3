"""Frameworks and inference engines as nodes declare them and templates ask for them.

    >>> unmet(("torch>=2.3",), frozenset({"torch 2.4.1", "vllm==0.6.3"}))  # None: satisfied
    >>> unmet(("torch>=2.5", "vllm"), frozenset({"torch 2.4.1", "vllm==0.6.3"}))
    ('torch>=2.5', 'torch 2.4.1')

A template asks with requirement strings (PEP 508 without extras, markers or URLs): ``torch``,
``torch>=2.3``, ``vllm>=0.6,<0.7``. A node declares ``torch==2.4.1``, ``torch 2.4.1`` or a bare
``torch``. A bare name satisfies only a requirement without a version range: nothing says which
version it is. Versions on the node are read as :func:`.units.version_key` reads a driver's
(``mindie 1.0.RC3`` is a pre-release of 1.0), and a range contains pre-releases: what is installed
is what runs. Names compare as PyPI compares them (``torch_npu`` is ``torch-npu``), and ``pytorch``
is ``torch``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from .units import version_key

__all__ = ["parse_requirement", "unmet"]

# Names the ecosystem writes two ways.
_ALIASES = {"pytorch": "torch"}
_DECLARED = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:(?:==|=|\s)\s*(\S+))?\s*$")


def _name(text: str) -> str:
    name = canonicalize_name(text)
    return _ALIASES.get(name, name)


@lru_cache(maxsize=4096)
def parse_requirement(text: str) -> tuple[str, SpecifierSet | None]:
    """``"torch>=2.3"`` -> ``("torch", SpecifierSet(">=2.3"))``; a bare name has no range. Raises ValueError."""
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        raise ValueError(f"{text!r} is not a requirement such as 'torch' or 'torch>=2.3': {str(exc).splitlines()[0]}") \
            from None
    if requirement.extras or requirement.marker is not None or requirement.url:
        raise ValueError(f"{text!r}: a requirement here is a name and a version range, without extras, markers or URLs")
    return _name(requirement.name), requirement.specifier if requirement.specifier else None


@lru_cache(maxsize=1024)
def _provided(declared: frozenset[str]) -> dict[str, list[tuple[str, Version | None]]]:
    """Per canonical name, what the node declares of it: (the entry as written, its version or None)."""
    found: dict[str, list[tuple[str, Version | None]]] = {}
    for entry in declared:
        match = _DECLARED.match(entry)
        if match is None:  # not a name; it can satisfy nothing
            continue
        name, version = match.groups()
        found.setdefault(_name(name), []).append((entry.strip(), version_key(version) if version else None))
    return found


def unmet(requirements: tuple[str, ...], declared: frozenset[str]) -> tuple[str, str] | None:
    """The first requirement ``declared`` does not satisfy and what it has of that name (all it has when it has
    none of it), or None when all are satisfied."""
    if not requirements:
        return None
    provided = _provided(declared)
    for text in requirements:
        name, specifier = parse_requirement(text)
        entries = provided.get(name)
        if entries is None:
            return text, ",".join(sorted(declared)) or "none"
        if specifier is None:
            continue
        if not any(version is not None and specifier.contains(version, prereleases=True) for _, version in entries):
            return text, ",".join(sorted(entry if version else f"{entry} (no version)" for entry, version in entries))
    return None
