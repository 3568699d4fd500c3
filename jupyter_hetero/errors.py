"""Domain errors, each with the HTTP status it maps to (mapped once, in the base handler).

    HeteroError
    ├── InvalidRequest      400  bad input; ``field`` names what is wrong
    ├── Forbidden           403  authenticated but not allowed; ``reason`` says why
    ├── NotFound            404  an unknown name or id
    ├── Conflict            409  the request is valid but clashes with the current state
    ├── PayloadTooLarge     413  a body or one of its fields is over the server's limit, which it names
    ├── TooManyRequests     429  a user's submissions came faster than their rate; ``retry_after_s`` says when
    └── Unavailable         503  nothing can answer it now (a service with no ready replica)

Raised with an ``i18n.Message``, an error answers in English (``message``) and Simplified Chinese
(``message_zh``) from the catalog: ``Forbidden(Message(N_("user {user!r} ..."), user=u), reason=...)``.
"""

from __future__ import annotations

from typing import Any

from .i18n import Message

__all__ = ["Conflict", "Forbidden", "GatewayTimeout", "HeteroError", "InvalidRequest", "NotFound", "PayloadTooLarge",
           "TooManyRequests", "Unavailable"]


class HeteroError(Exception):
    """Base of every error a client can cause; never a server fault."""

    status = 500

    def __init__(self, message: str | Message, **detail: Any):
        if isinstance(message, Message):
            detail.setdefault("message_zh", message.text("zh"))
            message = message.text("en")
        super().__init__(message)
        self.message = message
        self.detail = {key: value for key, value in detail.items() if value is not None}

    def to_json(self) -> dict[str, Any]:
        return {"message": self.message, **self.detail}


class InvalidRequest(HeteroError):
    status = 400

    def __init__(self, message: str | Message, *, field: str | None = None, **detail: Any):
        super().__init__(message, field=field, **detail)
        self.field = field


class Forbidden(HeteroError):
    status = 403

    def __init__(self, message: str | Message, *, reason: str | None = None, **detail: Any):
        super().__init__(message, reason=reason or str(message), **detail)


class NotFound(HeteroError):
    status = 404


class Conflict(HeteroError):
    status = 409


class PayloadTooLarge(HeteroError):
    status = 413


class TooManyRequests(HeteroError):
    """Sent with a ``Retry-After`` header of ``retry_after_s`` rounded up."""

    status = 429

    def __init__(self, message: str | Message, *, retry_after_s: float, **detail: Any):
        super().__init__(message, retry_after_s=retry_after_s, reason="rate-limited", **detail)
        self.retry_after_s = retry_after_s


class Unavailable(HeteroError):
    status = 503


class GatewayTimeout(HeteroError):
    """What the server passed on was not answered in time (a service's replica)."""

    status = 504
