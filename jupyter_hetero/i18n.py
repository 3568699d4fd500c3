"""Messages in the reader's language: English source strings, translated through gettext catalogs.

    from jupyter_hetero.i18n import N_, Message, translate
    GONE = N_("node {node} is no longer in the inventory")
    translate(GONE, "zh").format(node="n1")          # '节点 n1 已不在资源清单中'
    Message(GONE, node="n1").text("zh")              # the same, formatted on demand

The catalogs are ``locale/<lang>/LC_MESSAGES/jupyter_hetero.mo``, compiled from the ``.po``
files at build time (``scripts/i18n.py compile``); a language without one reads English.
"""

from __future__ import annotations

import gettext
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["DOMAIN", "LOCALE_DIR", "Message", "N_", "locale_of", "session_language", "translate"]

DOMAIN = "jupyter_hetero"
LOCALE_DIR = Path(__file__).parent / "locale"


def N_(message: str) -> str:
    """Mark ``message`` for the catalog without translating it yet (it is translated when read)."""
    return message


def locale_of(language: str) -> str:
    """The catalog locale for a language tag: ``zh``, ``zh-CN`` and ``zh_Hans`` all read ``zh_CN``."""
    tag = (language or "en").replace("-", "_")
    if tag.lower().startswith("zh"):
        return "zh_CN"  # the only Chinese catalog shipped is Simplified Chinese
    return tag


def session_language(environ: Mapping[str, str] | None = None) -> str:
    """The language a notebook session speaks: ``JUPYTER_HETERO_LANG``, else the locale (``LC_ALL``,
    ``LC_MESSAGES``, ``LANG``); ``zh`` for any Chinese one, else ``en``."""
    environ = os.environ if environ is None else environ
    for name in ("JUPYTER_HETERO_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        if environ.get(name):
            return "zh" if environ[name].lower().startswith("zh") else "en"
    return "en"


@cache
def _translations(locale: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[locale], fallback=True)


def translate(message: str, language: str) -> str:
    """``message`` in ``language``; English (the source) when no catalog or entry has it."""
    return _translations(locale_of(language)).gettext(message)


class Message:
    """A catalog message and its parameters, rendered in whichever language a reader asks for.

        Message(N_("unknown tenant {name!r}"), name="t1").text("zh")
    """

    __slots__ = ("params", "source")

    def __init__(self, source: str, **params: Any):
        self.source = source
        self.params = params

    def text(self, language: str = "en") -> str:
        """The message in ``language``; a parameter that is itself a Message is read in the same language."""
        params = {key: value.text(language) if isinstance(value, Message) else value for key, value in self.params.items()}
        return translate(self.source, language).format(**params)

    def __str__(self) -> str:
        return self.text("en")

    def __repr__(self) -> str:
        return f"Message({self.source!r}, **{self.params!r})"
