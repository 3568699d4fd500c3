"""What every ``%hetero_*`` magic shares: its words in the session's language, its one-line usage error, its
arguments parsed as a shell splits them, and a server's refusal as one readable line.

    args = parse(magic, line)                        # magic: a method declared with @magic_arguments
    raise usage("hetero_schedule", say(N_("needs --cron")))
    schedule = call(client.request, "POST", "schedules", body)
"""

from __future__ import annotations

import shlex

from IPython.core.error import UsageError

from ..i18n import Message, session_language
from .cellcode import PushError
from .client import ApiError, ServerNotFound

__all__ = ["call", "parse", "say", "usage"]


def say(message: str, **params) -> str:
    """``message`` (marked with ``N_``) in the session's language (:func:`session_language`)."""
    return Message(message, **params).text(session_language())


def usage(magic: str, message: str) -> UsageError:
    """The one error a magic's bad argument gives: the magic, what is wrong, where its help is."""
    return UsageError(f"%{magic}: {message} (see %{magic}? · 用法见 %{magic}?)")


def parse(magic, line: str | list[str]):
    """``magic``'s arguments parsed by its ``@argument`` declarations; a bad one is a :func:`usage` error."""
    name = magic.parser.prog
    try:
        # Split as a shell does (IPython's parse_argstring keeps the quotes): -p model='"bert"' is "bert".
        return magic.parser.parse_args(shlex.split(line) if isinstance(line, str) else line)
    except UsageError as exc:  # argparse's own message names the argument
        raise usage(name, str(exc)) from None
    except ValueError as exc:  # the line itself does not split, e.g. an unclosed quote
        raise usage(name, str(exc)) from None


def call(function, *args, **kwargs):
    """Run a client call, turning server refusals into one readable line (the field named where the server named
    one, the valid values where it listed them)."""
    try:
        return function(*args, **kwargs)
    except ApiError as exc:
        detail = exc.body.get("message", str(exc))
        field = exc.body.get("field")
        if field and field not in detail:  # a schedule's job is checked as job.<field>: say which
            detail = f"{field}: {detail}"
        known = exc.body.get("known")
        raise UsageError(f"{detail}" + (f" (valid: {', '.join(known)})" if known else "")) from None
    except (ServerNotFound, PushError) as exc:
        raise UsageError(str(exc)) from None
