"""The base handler: authentication, the platform, query parsing and domain-error mapping."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from pydantic import BaseModel, ValidationError
from sqlalchemy.exc import OperationalError
from tornado import web

from ..auth import CredentialAuthorizer, CredentialIdentityProvider
from ..errors import HeteroError, InvalidRequest, NotFound, TooManyRequests
from ..i18n import N_, Message, translate
from ..models import MAX_STORED_INT
from ..platform.identity import Identity
from ..platform.wiring import Platform
from ..platform.request_limits import BodyLimits, SubmissionRate
from ..platform.scheduling.engine_process import ENGINE_RESTARTING, EngineUnavailable

__all__ = ["API_PREFIX", "IDEMPOTENCY_KEY", "ApiHandler", "HeteroHandler", "Relay", "parse_workload_id"]

API_PREFIX = "hetero/api/v1"
# The header a client names one submission by, the same on every try of it (the IETF draft's name).
IDEMPOTENCY_KEY = "Idempotency-Key"
_KEY_LENGTH = 128
Q = TypeVar("Q", bound=BaseModel)
R = TypeVar("R")
# Query parameters that belong to jupyter-server's own auth, not to our API.
_TRANSPORT_PARAMS = frozenset({"token", "_xsrf"})
# Bodies up to this size are parsed on the event loop (in microseconds); larger ones in a worker thread, so that
# one user's big body never holds every other user's requests.
_PARSE_ON_LOOP_BYTES = 64 * 1024
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})


class Relay:
    """Every HTTP method a relay passes on (to the hub's service, to a service's replica), each
    authenticated and authorised like the rest, all handled by ``relay(*path_args)``."""

    async def relay(self, *args: str, **kwargs: str) -> None:
        raise NotImplementedError

    @web.authenticated
    @authorized
    async def get(self, *args: str, **kwargs: str) -> None:
        await self.relay(*args, **kwargs)

    @web.authenticated
    @authorized
    async def post(self, *args: str, **kwargs: str) -> None:
        await self.relay(*args, **kwargs)

    @web.authenticated
    @authorized
    async def put(self, *args: str, **kwargs: str) -> None:
        await self.relay(*args, **kwargs)

    @web.authenticated
    @authorized
    async def patch(self, *args: str, **kwargs: str) -> None:
        await self.relay(*args, **kwargs)

    @web.authenticated
    @authorized
    async def delete(self, *args: str, **kwargs: str) -> None:
        await self.relay(*args, **kwargs)


# What a client is told (503) when a part the server needs is down for now: a dry run met a dead or stuck engine
# process (it restarts), or the store could not be written (locked past its timeout, or its disk full).
STORE_UNAVAILABLE = N_("The store cannot be written now (it is locked or its disk is full); nothing of this request "
                       "was stored: try again in a while.")
_UNAVAILABLE: dict[type, tuple[str, str]] = {
    EngineUnavailable: (ENGINE_RESTARTING, "engine-unavailable"),
    OperationalError: (STORE_UNAVAILABLE, "store-unavailable"),
}


class ApiHandler(ExtensionHandlerMixin, APIHandler):
    """JSON in and out, authorised on the ``hetero`` resource, domain errors as their statuses."""

    auth_resource = "hetero"
    _parsed: tuple[Any, HeteroError | None] | None = None  # a big body, parsed in prepare off the loop

    async def prepare(self) -> None:
        """Bound the body before anything reads it (413 naming the limit), and parse a big one off the loop."""
        await super().prepare()
        raw = self.request.body
        if not raw or self.request.method not in _WITH_BODY or isinstance(self, Relay):
            return  # a relay passes bodies on unread: their limits are the receiver's
        limits = self.body_limits
        limits.check_body(len(raw))
        if len(raw) > _PARSE_ON_LOOP_BYTES:
            # A mistake in it is kept for body() to raise: refusing it here would answer before authentication.
            self._parsed = await self.off_loop(partial(_parse_kept, raw, limits))

    @property
    def body_limits(self) -> BodyLimits:
        return self.settings.get("hetero_body_limits") or BodyLimits()

    async def off_loop(self, function: Callable[[], R]) -> R:
        """``function()`` in a worker thread: for what blocks for long (dry cycles), which the event
        loop, answering every other request, must not wait for."""
        return await asyncio.get_running_loop().run_in_executor(None, function)

    def query(self, model: type[Q]) -> Q:
        """Parse the query string into ``model``; a bad value is a 400 naming the parameter."""
        raw = {key: _text(values[-1], "query parameter", key)
               for key, values in self.request.query_arguments.items() if key not in _TRANSPORT_PARAMS}
        _refuse_unusable(raw, "query parameter")
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            raise _invalid(exc, "query parameter") from None

    def request_key(self) -> str | None:
        """The request's Idempotency-Key: None without one; a 400 naming the header when it is not 1 to 128
        visible ASCII characters."""
        key = self.request.headers.get(IDEMPOTENCY_KEY)
        if key is None:
            return None
        if not 0 < len(key) <= _KEY_LENGTH or not all("!" <= char <= "~" for char in key):
            raise InvalidRequest(Message(N_("the Idempotency-Key header must be 1 to {most} visible ASCII characters "
                                            "(a UUID, say)"), most=_KEY_LENGTH), field=IDEMPOTENCY_KEY)
        return key

    def body(self, model: type[Q]) -> Q:
        """Parse the JSON body into ``model``; malformed JSON or a bad field is a 400 naming it, a value over
        ``max_field_bytes`` a 413 naming it."""
        if self._parsed is not None:
            data, problem = self._parsed
            if problem is not None:
                raise problem
        else:
            data = _parse(self.request.body, self.body_limits)
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise _invalid(exc, "field") from None

    def admit_submission(self, user: str) -> None:
        """A 429 with Retry-After when ``user`` submits faster than ``c.HeteroApp.submissions_per_minute``; the
        server's owner, whose token runs the server, is not limited."""
        rate: SubmissionRate | None = self.settings.get("hetero_submission_rate")
        if rate is not None and user != self.settings["hetero_platform"].owner:
            rate.admit(user)

    def decode_argument(self, value: bytes, name: str | None = None) -> str:
        """A path argument as text: bytes that are not UTF-8 are a 400 naming the argument (tornado's names none)."""
        return _text(value, "path parameter", name or "path")

    def reply(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data, default=str))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, HeteroError):
            if isinstance(exc, TooManyRequests):
                self.set_header("Retry-After", str(math.ceil(exc.retry_after_s)))
            self.set_status(exc.status)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(exc.to_json(), default=str))
            return
        unavailable = next((told for kind, told in _UNAVAILABLE.items() if isinstance(exc, kind)), None)
        if unavailable is not None:  # the server's part is down for now, not the request at fault: try again
            message, reason = unavailable
            self.set_status(503)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"message": message, "message_zh": translate(message, "zh"), "reason": reason}))
            return
        super().write_error(status_code, **kwargs)

    def log_exception(self, typ, value, tb) -> None:
        if isinstance(value, HeteroError):
            self.log.info("hetero %s %s -> %s: %s", self.request.method, self.request.path, value.status, value.message)
            return
        super().log_exception(typ, value, tb)


class HeteroHandler(ApiHandler):
    """Every API handler of a server with a scheduler: the platform, and who the request is to it."""

    @property
    def platform(self) -> Platform:
        return self.settings["hetero_platform"]

    # Workload credentials are known here and nowhere else in the server: these two wrap the
    # server's identity provider and authorizer for the hetero handlers only (see auth.py).
    @property
    def identity_provider(self) -> CredentialIdentityProvider:
        server = super().identity_provider
        wrapper = self.settings.get("hetero_identity_provider")
        if wrapper is None or wrapper.server is not server:  # one per server, not one per request
            wrapper = self.settings["hetero_identity_provider"] = CredentialIdentityProvider(
                server, self.platform.credentials.authenticate)
        return wrapper

    @property
    def authorizer(self) -> CredentialAuthorizer:
        return CredentialAuthorizer(super().authorizer)

    @property
    def identity(self) -> Identity:
        return self.platform.identity_of(self.current_user, self)


def parse_workload_id(text: str) -> int:
    """A workload id from a path: ASCII digits only, as the API writes ids. Python's ``int()`` would also read
    ``1_0``, `` 2`` or ``٣`` as some other workload's id; those, and a number the store cannot hold, name no
    workload (a 404)."""
    number = int(text) if text.isascii() and text.isdigit() else None
    if number is None or number > MAX_STORED_INT:
        raise NotFound(Message(N_("workload {workload!r} does not exist"), workload=text))
    return number


# A bad value's sentence, and an unknown name's, by where it was found. Pydantic's own wording of
# the problem (the {problem}) is English in both languages.
_INVALID = {
    "query parameter": (N_("query parameter {field!r}: {problem}"), N_("query parameter {field!r}: unknown query parameter")),
    "field": (N_("field {field!r}: {problem}"), N_("field {field!r}: unknown field")),
}


def _invalid(exc: ValidationError, noun: str) -> InvalidRequest:
    """The first validation error as a 400 whose message starts with the offending name."""
    first = exc.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "body"
    bad_value, unknown_name = _INVALID[noun]
    sentence = unknown_name if first["type"] == "extra_forbidden" else bad_value
    return InvalidRequest(Message(sentence, field=field, problem=first["msg"]), field=field,
                          errors=[{"field": ".".join(map(str, e["loc"])), "message": e["msg"]} for e in exc.errors()])


def _parse(raw: bytes | None, limits: BodyLimits) -> Any:
    """A body's JSON, with nothing in it no name may hold and no value over the limit."""
    try:
        # Bytes that are not UTF-8 are read as lone surrogates (a BOM is dropped), so that the check below names
        # the field that holds them rather than refusing the whole body.
        data = json.loads((raw or b"{}").decode("utf-8-sig", "surrogateescape"))
        limits.check_fields(data)
        _refuse_unusable(data, "field")
    except ValueError as exc:
        raise InvalidRequest(Message(N_("request body is not valid JSON: {problem}"), problem=exc),
                             field="body") from None
    except RecursionError:
        raise InvalidRequest(Message(N_("request body is nested too deeply to read")), field="body") from None
    return data


def _parse_kept(raw: bytes, limits: BodyLimits) -> tuple[Any, HeteroError | None]:
    try:
        return _parse(raw, limits), None
    except HeteroError as exc:
        return None, exc


def _text(value: bytes, kind: str, field: str) -> str:
    """``value`` decoded as UTF-8; anything else (a stray byte, an encoded surrogate) is a 400 naming ``field``."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequest(Message(N_("{kind} {field} is not UTF-8 text"), kind=kind, field=field),
                             field=field) from None


def _refuse_unusable(data: Any, kind: str, path: str = "") -> None:
    """What no name, path, argument, variable or quantity may hold is a 400 naming where it is: a NUL character;
    text that is not UTF-8, which no file name or environment can encode (a lone surrogate: JSON's "\\ud800", or a
    byte that is not UTF-8, as ``body`` reads it); a number that is not finite (NaN, Infinity, or 1e999, which JSON's
    parser reads as infinity)."""
    field = path or "body"
    if isinstance(data, str):
        if "\x00" in data:
            raise InvalidRequest(Message(N_("{kind} {field} holds a NUL character, which no name, path, argument or "
                                            "variable may hold"), kind=kind, field=field), field=field)
        try:
            data.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidRequest(Message(N_("{kind} {field} is not UTF-8 text"), kind=kind, field=field),
                                 field=field) from None
    elif isinstance(data, float):
        if not math.isfinite(data):
            raise InvalidRequest(Message(N_("{kind} {field} is not a finite number"), kind=kind, field=field),
                                 field=field)
    elif isinstance(data, dict):
        for key, value in data.items():
            _refuse_unusable(key, kind, f"{path}.{key}" if path else str(key))
            _refuse_unusable(value, kind, f"{path}.{key}" if path else str(key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            _refuse_unusable(value, kind, f"{path}[{index}]")
