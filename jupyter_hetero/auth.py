"""A team on one server without JupyterHub: one token per person, each mapped to a user and groups.

    c.ServerApp.identity_provider_class = "jupyter_hetero.auth.TeamIdentityProvider"
    c.TeamIdentityProvider.user_tokens = {
        "<alice's token>": "alice",
        "<bob's token>": {"name": "bob", "groups": ["nlp"]},
    }

Whoever holds the server's own token is its owner (see ``HeteroApp.owner_is_platform_admin``).
"""

from __future__ import annotations

from dataclasses import dataclass

from jupyter_server.auth.identity import IdentityProvider, User
from traitlets import Dict

__all__ = ["TeamIdentityProvider", "TeamUser"]


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
        if isinstance(entry, str):
            return TeamUser(username=entry)
        return TeamUser(username=entry["name"], groups=tuple(entry.get("groups", ())))
