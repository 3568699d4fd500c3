"""Which routes of the owner's server a team member reaches: :data:`MEMBER_ROUTES`, one explicit allow list.

A member reaches the routes it lists, each with the methods it names: the hetero API, JupyterLab's page with the
Hetero panel (read-only settings and workspace), the kernelspecs, their own hetero kernels, who they are
(``/api/me``), signing in and out, static files and 404s; :func:`member_refusal` says why any other request is
refused. The team's identity provider asks it on every request a member makes (``auth.TeamIdentityProvider``),
and the server's authorizer where a handler calls one (``authorizer.HeteroAuthorizer``); both build on this
module, which builds on neither.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING
from urllib.parse import unquote

from tornado import web

from .i18n import N_, Message

if TYPE_CHECKING:
    from .auth import TeamUser

__all__ = ["HETERO_HANDLERS", "MEMBER_ROUTES", "Grant", "handler_key", "member_refusal", "refuse_unlisted_route"]

_READ = frozenset({"GET", "HEAD"})
_ANY = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# The hetero API's handlers, one key for the package: each operation has its own rule there, by tenant and role,
# and the authorisation matrix (tests/reliability/rules.py) fails for any operation without one.
HETERO_HANDLERS = "jupyter_hetero.handlers"
_HETERO_PROVISIONER = "hetero-provisioner"

@dataclass(frozen=True)
class Grant:
    """The methods of one route a member may use, and the condition that narrows them."""

    methods: frozenset[str]
    own_kernel: bool = False  # only a kernel whose workload is the member's own
    hetero_kernel_start: bool = False  # a POST only to start a hetero kernelspec (its workload is then theirs)


# Handlers by "module.Class" (exactly: a subclass is another route, denied until listed). Read before adding one:
# a route here is one a member may use on the owner's server, as the server's OS user.
MEMBER_ROUTES: Mapping[str, Grant] = MappingProxyType({
    HETERO_HANDLERS: Grant(_ANY),
    # Who they are, and the server's version: what JupyterLab asks first.
    "jupyter_server.services.api.handlers.IdentityHandler": Grant(_READ),
    "jupyter_server.base.handlers.APIVersionHandler": Grant(_READ),
    # The kernelspecs (the launcher's and the panel's list), and their own hetero kernels, started through the
    # hetero API or Jupyter's kernels API; another's kernel, and any kernel that is not hetero, stay out of reach.
    "jupyter_server.services.kernelspecs.handlers.MainKernelSpecHandler": Grant(_READ),
    "jupyter_server.services.kernelspecs.handlers.KernelSpecHandler": Grant(_READ),
    "jupyter_server.kernelspecs.handlers.KernelSpecResourceHandler": Grant(_READ),
    "jupyter_server.services.kernels.handlers.MainKernelHandler": Grant(frozenset({"POST"}), hetero_kernel_start=True),
    "jupyter_server.services.kernels.handlers.KernelHandler": Grant(frozenset({"GET", "HEAD", "DELETE"}),
                                                                    own_kernel=True),
    "jupyter_server.services.kernels.handlers.KernelActionHandler": Grant(frozenset({"POST"}), own_kernel=True),
    "jupyter_server.services.kernels.websocket.KernelWebsocketHandler": Grant(_READ, own_kernel=True),
    # JupyterLab's page with the Hetero panel, and what the page reads; the owner's settings and workspace are read,
    # never written.
    "jupyterlab_server.handlers.LabHandler": Grant(_READ),
    "jupyterlab_server.handlers.NotFoundHandler": Grant(_READ),
    "jupyterlab_server.settings_handler.SettingsHandler": Grant(_READ),
    "jupyterlab_server.workspaces_handler.WorkspacesHandler": Grant(_READ),
    "jupyterlab_server.translations_handler.TranslationsHandler": Grant(_READ),
    "jupyterlab_server.listings_handler.ListingsHandler": Grant(_READ),
    "jupyterlab_server.themes_handler.ThemesHandler": Grant(_READ),
    "jupyterlab_server.licenses_handler.LicensesHandler": Grant(_READ),
    # Signing in and out, the front page's redirect, static files and what is not there.
    "jupyter_server.auth.login.LoginFormHandler": Grant(frozenset({"GET", "HEAD", "POST"})),
    "jupyter_server.auth.logout.LogoutHandler": Grant(_READ),
    "jupyter_server.base.handlers.MainHandler": Grant(_READ),
    "jupyter_server.base.handlers.TrailingSlashHandler": Grant(_READ),
    "jupyter_server.base.handlers.FileFindHandler": Grant(_READ),
    "jupyter_server.base.handlers.PublicStaticFileHandler": Grant(_READ),
    "jupyter_server.base.handlers.Template404": Grant(_ANY),
})

MEMBER_REFUSED = N_("team member {user} may use the hetero API, JupyterLab's Hetero panel and their own hetero "
                    "kernels on this server, not {method} {path}")
NOT_THEIR_KERNEL = N_("kernel {kernel} is not one of team member {user}'s own hetero kernels")
NOT_HETERO_KERNEL = N_("team member {user} may start hetero kernels only, not kernelspec {kernel!r}")



def handler_key(handler_class: type) -> str:
    """How the allow lists name a handler: its module and class, or the hetero API's package for its handlers."""
    module = handler_class.__module__
    if module == HETERO_HANDLERS or module.startswith(HETERO_HANDLERS + "."):
        return HETERO_HANDLERS
    return f"{module}.{handler_class.__qualname__}"


async def member_refusal(handler: web.RequestHandler, user: TeamUser) -> Message | None:
    """Why ``user``, a team member, may not make this request (None when they may)."""
    method = handler.request.method or "GET"
    grant = MEMBER_ROUTES.get(handler_key(type(handler)))
    if grant is None or method not in grant.methods:
        # Unquoted, and with no %: jupyter_server formats a page's message with %, its API answers do not.
        path = unquote(handler.request.path).replace("%", "")
        return Message(MEMBER_REFUSED, user=user.username, method=method, path=path)
    if grant.own_kernel:
        kernel_id = handler.path_kwargs.get("kernel_id", "")
        platform = handler.settings.get("hetero_platform")
        workload = platform.kernels.workload_of(kernel_id) if platform is not None else None
        if workload is None or workload.user != user.username:
            return Message(NOT_THEIR_KERNEL, kernel=kernel_id, user=user.username)
    if grant.hetero_kernel_start:
        name = _requested_kernelspec(handler)
        if not await _is_hetero_kernelspec(handler, name):
            return Message(NOT_HETERO_KERNEL, user=user.username, kernel=name)
    return None


def _requested_kernelspec(handler: web.RequestHandler) -> str:
    try:
        body = json.loads(handler.request.body or b"{}")
    except ValueError:
        return ""
    name = body.get("name") if isinstance(body, dict) else None
    # No name starts the server's default kernel, which is no hetero kernel unless the owner made it one.
    return name if isinstance(name, str) else handler.kernel_manager.default_kernel_name


async def _is_hetero_kernelspec(handler: web.RequestHandler, name: str) -> bool:
    try:
        spec = handler.kernel_spec_manager.get_kernel_spec(name)
        spec = await spec if inspect.isawaitable(spec) else spec
    except Exception:  # noqa: BLE001 - no such kernelspec (or an unreadable one): no hetero kernel to start
        return False
    provisioner = (getattr(spec, "metadata", None) or {}).get("kernel_provisioner") or {}
    return provisioner.get("provisioner_name") == _HETERO_PROVISIONER


async def refuse_unlisted_route(handler: web.RequestHandler, user: TeamUser) -> None:
    """A 403 with the reason, when a member asks for a route :data:`MEMBER_ROUTES` does not give them."""
    refusal = await member_refusal(handler, user)
    if refusal is not None:
        # Who they are, as prepare() would have set next: the error page asks (jupyter_server refuses to guess).
        handler.current_user = handler._jupyter_current_user = user
        raise web.HTTPError(403, refusal.text("en"), reason="Forbidden")
