"""A team on one server without JupyterHub: one token per person, each mapped to a user and groups.

    c.ServerApp.identity_provider_class = "jupyter_hetero.auth.TeamIdentityProvider"
    c.TeamIdentityProvider.user_tokens = {
        "<alice's token>": "alice",
        "<bob's token>": {"name": "bob", "groups": ["nlp"]},
    }

Whoever holds the server's own token is its owner (see ``HeteroApp.owner_is_platform_admin``).

A member stays that member across requests: the login cookie names them as a team member, and
JupyterLab pages served to them do not carry the server's own token (JupyterLab would otherwise
send it with every request, making everyone the owner); they authenticate with the cookie instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jupyter_server.auth.identity import IdentityProvider, User
from traitlets import Dict

__all__ = ["TeamIdentityProvider", "TeamUser", "hide_server_token_from_members"]

PageConfigHook = Callable[[Any, dict], dict]


@dataclass
class TeamUser(User):
    """A user who signed in with a personal token, with the groups that map them to a tenant."""

    groups: tuple[str, ...] = ()


class TeamIdentityProvider(IdentityProvider):
    user_tokens = Dict(
        config=True,
        help="Personal tokens: token -> user name, or token -> {'name': user, 'groups': [group, ...]}.",
    )

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
