"""Which routes of the server a caller who is not its owner reaches: one explicit allow list per kind of caller.

    c.ServerApp.identity_provider_class = "jupyter_hetero.auth.TeamIdentityProvider"
    c.ServerApp.authorizer_class = "jupyter_hetero.authorizer.HeteroAuthorizer"  # HeteroApp sets it in team mode

A team member reaches the routes :data:`member_routes.MEMBER_ROUTES` lists, each with the methods it names: the
hetero API, JupyterLab's page with the Hetero panel (read-only settings and workspace), the kernelspecs, their own
hetero kernels, who they are (``/api/me``), signing in and out, static files and 404s. Every other route (Jupyter's
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
from collections.abc import Callable
from typing import Any

from jinja2 import Environment, Template
from jupyter_server.auth.authorizer import AllowAllAuthorizer, Authorizer
from jupyter_server.base.call_context import CallContext
from tornado import web

from .auth import TeamIdentityProvider, TeamUser, is_server_owner
from .member_routes import HETERO_HANDLERS, MEMBER_ROUTES, Grant, handler_key, member_refusal

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

# The resources (jupyter_server's auth_resource) of the handlers MEMBER_ROUTES lists that ask the authorizer.
_MEMBER_RESOURCES = frozenset({"hetero", "kernels", "kernelspecs"})


# The hub's shared service: its API, and the callback of the hub's OAuth that signs a browser in to it.
SERVICE_ROUTES: frozenset[str] = frozenset({
    HETERO_HANDLERS,
    "jupyterhub.singleuser.extension.JupyterHubOAuthCallbackHandler",
})

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
