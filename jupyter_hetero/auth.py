"""A team on one server without JupyterHub: one token per person, each mapped to a user and groups.

    c.ServerApp.identity_provider_class = "jupyter_hetero.auth.TeamIdentityProvider"
    c.TeamIdentityProvider.user_tokens = {
        "<alice's token>": "alice",
        "<bob's token>": {"name": "bob", "groups": ["nlp"]},
    }

Whoever holds the server's own token is its owner (see :func:`is_server_owner` and
``HeteroApp.owner_is_platform_admin``).

A member stays that member across requests: the login cookie names them as a team member, and
JupyterLab pages served to them do not carry the server's own token (JupyterLab would otherwise
send it with every request, making everyone the owner); they authenticate with the cookie instead.
A member reaches the routes ``authorizer.MEMBER_ROUTES`` lists and no other (a 403 with the reason).

Kernels and jobs hold a workload credential (``platform/workloads/credentials.py``), never the server's
token. Only the hetero API's handlers know credentials: they see the server's identity provider
and authorizer through :class:`CredentialIdentityProvider` and :class:`CredentialAuthorizer`, which
turn a credential into a :class:`WorkloadUser` and let it reach the ``hetero`` resource alone.
Every other handler of the server sees an unknown token and refuses it.
"""

from __future__ import annotations

import hmac
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jupyter_server.auth.identity import (
    IdentityProvider,
    PasswordIdentityProvider,
    User,
)
from traitlets import Dict

from .credential_format import CREDENTIAL_PREFIX
from .member_routes import refuse_unlisted_route

__all__ = [
    "CredentialAuthorizer",
    "CredentialIdentityProvider",
    "TeamIdentityProvider",
    "TeamUser",
    "WorkloadUser",
    "groups_of",
    "hide_server_token_from_members",
    "hub_service_of",
    "is_server_owner",
]

_AUTHORIZATION = re.compile(r"(?:token|bearer)\s+(\S+)", re.IGNORECASE)
# jupyter_server's own identity providers authenticate one person only: whoever has the server's
# token or password (or no authentication at all). Anyone they let in is the server's owner.
_OWNER_ONLY_PROVIDERS = (IdentityProvider, PasswordIdentityProvider)

PageConfigHook = Callable[[Any, dict], dict]


@dataclass
class TeamUser(User):
    """A user who signed in with a personal token, with the groups that map them to a tenant."""

    groups: tuple[str, ...] = ()


@dataclass
class WorkloadUser(User):
    """A kernel or job calling the hetero API with its workload credential, on behalf of its submitter."""

    workload_id: int = 0
    tenant: str = ""


class TeamIdentityProvider(IdentityProvider):
    """jupyter_server's token and password login, plus a personal token per team member."""

    user_tokens = Dict(
        config=True,
        help="Personal tokens: token -> user name, or token -> {'name': user, 'groups': [group, ...]}.",
    )

    async def get_user(self, handler) -> User | None:
        user = await super().get_user(handler)
        if isinstance(user, TeamUser):
            # Every handler asks who is calling, only some ask the authorizer: a member's route is checked here.
            await refuse_unlisted_route(handler, user)
        return user

    async def get_user_token(self, handler) -> User | None:
        entry = self.user_tokens.get(self.get_token(handler) or "")
        if entry is None:
            return await super().get_user_token(handler)
        return self._member(entry)

    def user_to_cookie(self, user: User) -> str:
        if not isinstance(user, TeamUser):
            return super().user_to_cookie(user)
        return json.dumps({"team_member": user.username})

    def user_from_cookie(self, cookie_value: str) -> User | None:
        value = json.loads(cookie_value)
        if "team_member" not in value:
            return super().user_from_cookie(cookie_value)
        # Groups come from today's configuration; a member whose token was removed is signed out.
        for entry in self.user_tokens.values():
            member = self._member(entry)
            if member.username == value["team_member"]:
                return member
        return None

    @staticmethod
    def _member(entry: str | dict) -> TeamUser:
        if isinstance(entry, str):
            return TeamUser(username=entry)
        return TeamUser(username=entry["name"], groups=tuple(entry.get("groups", ())))


# Providers whose reading of a header token the hetero handlers repeat without a cookie (see
# CredentialIdentityProvider._header_token_user); any other provider always decides by itself.
_HEADER_TOKEN_PROVIDERS = (*_OWNER_ONLY_PROVIDERS, TeamIdentityProvider)


def hide_server_token_from_members(previous: PageConfigHook | None = None) -> PageConfigHook:
    """A JupyterLab ``page_config_hook`` that leaves the server's token out of team members' pages,
    after ``previous`` (another extension's hook), if any."""

    def hook(handler, page_config: dict) -> dict:
        if previous is not None:
            page_config = previous(handler, page_config)
        if isinstance(handler.current_user, TeamUser):
            page_config["token"] = ""
        return page_config

    return hook


def is_server_owner(provider: IdentityProvider | None, user: User, handler=None) -> bool:
    """Whether ``user`` is the server's owner: who got in with its own token or password (or the
    login cookie that set). jupyter_server's providers and TeamIdentityProvider can tell; under any
    other provider (JupyterHub's, a site's own) users are who it says, and only a request carrying
    the server's own token is the owner's."""
    if isinstance(user, (TeamUser, WorkloadUser)):
        return False
    if isinstance(provider, TeamIdentityProvider):
        return True  # a non-member got in through the server's token (or the cookie it set)
    if type(provider) in _OWNER_ONLY_PROVIDERS:
        return True
    return provider is not None and handler is not None and _carries_server_token(provider, handler)


def _carries_server_token(provider: IdentityProvider, handler) -> bool:
    server_token = provider.token or ""
    # The base class's reading of the request (header or ?token=), whatever the provider overrides.
    presented = IdentityProvider.get_token(provider, handler) or ""
    return bool(server_token) and hmac.compare_digest(presented.encode(), server_token.encode())


def groups_of(user: User) -> frozenset[str]:
    """The groups a user's provider reports: a team member's, or JupyterHub's (in the hub's user model)."""
    if isinstance(user, TeamUser):
        return frozenset(user.groups)
    hub_user = getattr(user, "hub_user", None)  # jupyterhub.singleuser's JupyterHubUser
    if isinstance(hub_user, dict):
        return frozenset(hub_user.get("groups") or ())
    groups = getattr(user, "groups", None)
    return frozenset(group for group in groups if isinstance(group, str)) if groups else frozenset()


def hub_service_of(user: User) -> str | None:
    """The name of the JupyterHub service whose token made the request, or None for a person.

    A hub service and a hub user may have the same name (the hub keeps them apart, by kind); the catalog
    names people, so a service must never be taken for the user it shares a name with."""
    hub_user = getattr(user, "hub_user", None)  # jupyterhub.singleuser's JupyterHubUser: the hub's model
    if isinstance(hub_user, dict) and hub_user.get("kind") == "service":
        return str(hub_user.get("name", ""))
    return None


def _presented_credential(handler) -> str | None:
    """The workload credential in the request's Authorization header, if that is what it carries.

    Credentials are read from the header only, never from ``?token=``, so they stay out of URLs and logs."""
    match = _AUTHORIZATION.fullmatch(handler.request.headers.get("Authorization", "").strip())
    token = match.group(1) if match else ""
    return token if token.startswith(CREDENTIAL_PREFIX) else None


class CredentialIdentityProvider:
    """The server's identity provider as the hetero handlers see it: a workload credential first,
    then whatever the server's own provider decides. Everything else is the server's provider's."""

    def __init__(self, server: IdentityProvider, authenticate: Callable[[str], Any]):
        self.server = self._server = server
        self._authenticate = authenticate  # credential -> its workload row; raises Forbidden when refused
        self._owner: User | None = None  # the server's token in a header, as one anonymous user

    def __getattr__(self, name: str) -> Any:
        return getattr(self._server, name)

    async def get_user(self, handler) -> User | None:
        credential = _presented_credential(handler)
        if credential is None:
            user = self._header_token_user(handler)
            if user is not None:
                handler._token_authenticated = True  # as jupyter_server marks a token: no XSRF check
                return user
            user = self._server.get_user(handler)
            return await user if inspect.isawaitable(user) else user
        workload = self._authenticate(credential)
        # A header credential is never a cookie, so it needs no XSRF check (as for jupyter_server's tokens);
        # no login cookie is set either: the credential never becomes a browser session.
        handler._token_authenticated = True
        return WorkloadUser(username=workload.user, workload_id=workload.id, tenant=workload.tenant)

    def _header_token_user(self, handler) -> User | None:
        """Who an API call is that carries a token in its Authorization header and no login cookie,
        under jupyter_server's own providers or TeamIdentityProvider: the member whose token it is,
        or the owner for the server's token; None for anything else (the server's provider decides).

        The same user the provider would find, without what it does for browsers on every such call:
        a new anonymous user, and a signed login cookie in the answer that API clients never send back."""
        server = self._server
        if type(server) not in _HEADER_TOKEN_PROVIDERS or "token" in handler.request.query_arguments:
            return None
        match = _AUTHORIZATION.fullmatch(handler.request.headers.get("Authorization", "").strip())
        if match is None or handler.get_cookie(server.get_cookie_name(handler)) is not None:
            return None
        presented = match.group(1)
        if isinstance(server, TeamIdentityProvider) and presented in server.user_tokens:
            return server._member(server.user_tokens[presented])
        token = server.token or ""
        if not token or not hmac.compare_digest(presented.encode(), token.encode()):
            return None
        if self._owner is None:
            self._owner = server.generate_anonymous_user(handler)
        return self._owner


class CredentialAuthorizer:
    """The server's authorizer as the hetero handlers see it: a workload credential may use the
    ``hetero`` resource and nothing else; every other user is the server's authorizer's to judge
    (JupyterHub's, for one, would not know what to make of a :class:`WorkloadUser`)."""

    def __init__(self, server):
        self._server = server

    def __getattr__(self, name: str) -> Any:
        return getattr(self._server, name)

    def is_authorized(self, handler, user: User, action: str, resource: str):
        if isinstance(user, WorkloadUser):
            return resource == "hetero"
        return self._server.is_authorized(handler, user, action, resource)
