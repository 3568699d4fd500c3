"""Which routes of the server a caller who is not its owner reaches: one explicit allow list per kind of caller.

    c.ServerApp.identity_provider_class = "jupyter_hetero.auth.TeamIdentityProvider"
    c.ServerApp.authorizer_class = "jupyter_hetero.authorizer.HeteroAuthorizer"  # HeteroApp sets it in team mode

A team member reaches the routes :data:`MEMBER_ROUTES` lists, each with the methods it names: the hetero API,
JupyterLab's page with the Hetero panel (read-only settings and workspace), the kernelspecs, their own hetero
kernels, who they are (``/api/me``), signing in and out, static files and 404s. Every other route (Jupyter's
contents, files, terminals, sessions, config, events, the server's shutdown and metrics, JupyterLab's build and
extension manager, and any route an extension adds later) answers them 403. jupyter_server asks an authorizer only
on the handlers that call it (``@authorized``); JupyterLab's pages and settings never do, so the team's identity
provider asks :func:`member_refusal` on every request a member makes (``TeamIdentityProvider.get_user``), and
:class:`HeteroAuthorizer` asks it too, where a handler calls the authorizer.

The hub's shared service serves :data:`SERVICE_ROUTES` alone (:func:`serve_only`): the hetero API and the hub's
OAuth callback; every other route of the server is removed from it. No page of the service, and no page a member
gets, carries the server's token (:func:`pages_without_token`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote

from jinja2 import Environment, Template
from jupyter_server.auth.authorizer import AllowAllAuthorizer, Authorizer
from jupyter_server.base.call_context import CallContext
from tornado import web

from .auth import TeamIdentityProvider, TeamUser, is_server_owner
from .i18n import N_, Message

__all__ = [
    "MEMBER_ROUTES",
    "SERVICE_ROUTES",
    "Grant",
    "HeteroAuthorizer",
    "guard_routes",
    "handler_key",
    "member_refusal",
    "pages_without_token",
    "serve_only",
    "served_handlers",
]

_READ = frozenset({"GET", "HEAD"})
_ANY = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# The hetero API's handlers, one key for the package: each operation has its own rule there, by tenant and role,
# and the authorisation matrix (tests/reliability/rules.py) fails for any operation without one.
HETERO_HANDLERS = "jupyter_hetero.handlers"
_HETERO_PROVISIONER = "hetero-provisioner"
# The resources (jupyter_server's auth_resource) of the handlers MEMBER_ROUTES lists that ask the authorizer.
_MEMBER_RESOURCES = frozenset({"hetero", "kernels", "kernelspecs"})


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

# The hub's shared service: its API, and the callback of the hub's OAuth that signs a browser in to it.
SERVICE_ROUTES: frozenset[str] = frozenset({
    HETERO_HANDLERS,
    "jupyterhub.singleuser.extension.JupyterHubOAuthCallbackHandler",
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


class HeteroAuthorizer(Authorizer):
    """jupyter_server's authorizer for a team's server: members reach :data:`MEMBER_ROUTES` alone; everyone else
    is judged by the authorizer it wraps (the server's own, which lets its owner do everything)."""

    def __init__(self, *args: Any, inner: Authorizer | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.inner = inner if inner is not None else AllowAllAuthorizer(parent=self, log=self.log,
                                                                        identity_provider=self.identity_provider)

    async def is_authorized(self, handler, user, action: str, resource: str) -> bool:
        if isinstance(user, TeamUser):
            # By resource too: /api/me reports a member's permissions on every resource from here.
            return resource in _MEMBER_RESOURCES and await member_refusal(handler, user) is None
        allowed = self.inner.is_authorized(handler, user, action, resource)
        return await allowed if inspect.isawaitable(allowed) else allowed


def pages_without_token(env: Environment, shows_token: Callable[[web.RequestHandler | None], bool]) -> None:
    """Render ``env``'s pages (jupyter_server's: every error page, the login page) with the server's token only
    for the requests ``shows_token`` accepts. ``page.html`` writes the token into every page for a signed-in
    caller, whoever they are; JupyterLab's own page is handled by ``auth.hide_server_token_from_members``."""

    class TokenFreeTemplate(Template):
        def render(self, *args: Any, **kwargs: Any) -> str:
            if "token" in kwargs and not shows_token(CallContext.get(CallContext.JUPYTER_HANDLER)):
                kwargs["token"] = ""
            return super().render(*args, **kwargs)

    env.template_class = TokenFreeTemplate
    if env.cache is not None:
        env.cache.clear()  # a template loaded before now would still be the plain class


def serve_only(web_app: web.Application, allowed: frozenset[str]) -> list[str]:
    """Remove every route of ``web_app`` whose handler ``allowed`` does not name, now and as extensions add theirs
    (``add_handlers``); the patterns removed now. What is left unmatched is tornado's plain 404, no page."""
    removed = _prune(web_app.default_router, allowed)
    add_handlers = web_app.add_handlers

    def add_allowed_handlers(host_pattern: str, host_handlers: list) -> None:
        kept = [spec for spec in host_handlers if handler_key(_handler_class(spec)) in allowed]
        if kept:
            add_handlers(host_pattern, kept)

    web_app.add_handlers = add_allowed_handlers
    return removed


def served_handlers(web_app: web.Application) -> set[str]:
    """The handlers ``web_app`` routes to now, as the allow lists name them."""
    return {handler_key(handler_class) for handler_class in _handler_classes(web_app.default_router)}


def _handler_classes(router: Any):
    for rule in router.rules:
        if hasattr(rule.target, "rules"):
            yield from _handler_classes(rule.target)
        elif isinstance(rule.target, type):
            yield rule.target


def _handler_class(spec: Any) -> type:
    # add_handlers takes (pattern, handler[, kwargs[, name]]) tuples or tornado URLSpecs.
    return spec.target if hasattr(spec, "target") else spec[1]


def _prune(router: Any, allowed: frozenset[str]) -> list[str]:
    removed: list[str] = []
    kept = []
    for rule in router.rules:
        target = rule.target
        if hasattr(target, "rules"):  # a nested router: the host's, or the wildcard one
            removed += _prune(target, allowed)
            kept.append(rule)
        elif isinstance(target, type) and handler_key(target) in allowed:
            kept.append(rule)
        else:
            removed.append(getattr(getattr(rule.matcher, "regex", None), "pattern", str(rule.matcher)))
    router.rules[:] = kept
    if hasattr(router, "named_rules"):  # tornado keeps named rules apart, for reverse_url
        router.named_rules = {name: rule for name, rule in router.named_rules.items() if rule in kept}
    return removed


def guard_routes(serverapp: Any, mode: str) -> None:
    """What HeteroApp does at its start: on a team's server, :class:`HeteroAuthorizer` (around the configured
    authorizer) and pages with the token for the owner alone; in the hub's service, :data:`SERVICE_ROUTES` alone
    and no page with the token (the service's hub token, which lists users and stops servers)."""
    settings = serverapp.web_app.settings
    if mode == "service":
        removed = serve_only(serverapp.web_app, SERVICE_ROUTES)
        pages_without_token(settings["jinja2_env"], lambda handler: False)
        # What it keeps, by name: an admin (and the hub's route tests) can see that nothing else is served.
        serverapp.log.info("jupyter-hetero: the hub's service serves %s; %d other routes removed",
                           json.dumps(sorted(served_handlers(serverapp.web_app))), len(removed))
        return
    provider = serverapp.identity_provider
    if not isinstance(provider, TeamIdentityProvider):
        return
    if not isinstance(serverapp.authorizer, HeteroAuthorizer):
        serverapp.authorizer = HeteroAuthorizer(parent=serverapp, identity_provider=provider,
                                                inner=serverapp.authorizer)
        settings["authorizer"] = serverapp.authorizer
    pages_without_token(settings["jinja2_env"], lambda handler: _owner_request(provider, handler))


def _owner_request(provider: Any, handler: web.RequestHandler | None) -> bool:
    user = getattr(handler, "_jupyter_current_user", None)  # unset when the request failed before authentication
    return user is not None and is_server_owner(provider, user, handler)
