"""Asking a vendor's tool one question, softly: whatever goes wrong comes back as a note, never an exception."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import TypeVar

from . import Runner

T = TypeVar("T")

# What a parser raises on output it cannot read: JSON errors are ValueErrors, missing keys KeyErrors, a list
# where an object was due AttributeErrors.
_GARBLED = (ValueError, KeyError, TypeError, IndexError, AttributeError)


def query(run: Runner, tool: str, argv: list[str], parse: Callable[[str], T]) -> tuple[T | None, str | None]:
    """The tool's answer as ``parse`` reads it, or None and a note saying why there is none.

    >>> query(lambda argv: "12", "cnmon", ["/usr/bin/cnmon", "info"], int)
    (12, None)
    >>> query(lambda argv: "twelve", "cnmon", ["/usr/bin/cnmon", "info"], int)[1]
    "cnmon: could not read the output of 'info' (ValueError: invalid literal for int() with base 10: 'twelve')"
    """
    text, note = _ask(run, tool, argv)
    if text is None:
        return None, note
    try:
        return parse(text), None
    except _GARBLED as exc:
        return None, f"{tool}: could not read the output of '{_asked(tool, argv)}' ({type(exc).__name__}: {exc})"


def _ask(run: Runner, tool: str, argv: list[str]) -> tuple[str | None, str | None]:
    asked = _asked(tool, argv)
    try:
        return run(argv), None
    except subprocess.TimeoutExpired as exc:
        return None, f"{tool}: no answer to '{asked}' within {exc.timeout:g} s"
    except subprocess.CalledProcessError as exc:
        said = _gist(exc.stderr) or _gist(exc.output) or f"exit status {exc.returncode}"
        return None, f"{tool}: '{asked}' failed ({said})"
    except OSError as exc:
        return None, f"{tool}: could not run '{asked}' ({exc})"


def _asked(tool: str, argv: list[str]) -> str:
    return " ".join(argv[1:]) or tool  # a tool asked nothing but its name (plain cnmon) is named


def _gist(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    gist = " ".join((text or "").split())
    return gist if len(gist) <= 200 else gist[:199] + "…"
