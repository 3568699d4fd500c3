"""Stand-ins for what cannot run here, configured into a real server through traitlets (never patched in);
the only place fakes live (builders are in builders.py).

    hetero_config["clock_class"] = "tests.fakes.SteppingClock"
    SteppingClock.step(3600)          # the wall clock jumps an hour, as an NTP step or a resume would
"""

from __future__ import annotations

import time

from jupyter_server.auth.identity import IdentityProvider, User

from jupyter_hetero.services.clock import Clock

__all__ = ["HeaderIdentityProvider", "HubStyleUser", "SteppingClock"]


class HubStyleUser(User):
    """Shaped like jupyterhub.singleuser's ``JupyterHubUser``: the hub's user model, groups included,
    is kept in ``hub_user``, not in attributes of the user."""

    def __init__(self, hub_user: dict):
        self.hub_user = hub_user
        super().__init__(username=hub_user["name"])


class HeaderIdentityProvider(IdentityProvider):
    """Another site's identity provider, which trusts a header to name the user.

    ``X-Test-User: mallory`` is a plain ``User``; ``X-Test-Hub-User: dave`` with
    ``X-Test-Hub-Groups: nlp-team,x`` is a hub-style user; anything else is the server's token as usual.
    Configure it with ``c.ServerApp.identity_provider_class = "tests.fakes.HeaderIdentityProvider"``."""

    def get_user(self, handler):
        headers = handler.request.headers
        if headers.get("X-Test-User"):
            user = User(username=headers["X-Test-User"])
        elif headers.get("X-Test-Hub-User"):
            groups = [group for group in headers.get("X-Test-Hub-Groups", "").split(",") if group]
            user = HubStyleUser({"kind": "user", "name": headers["X-Test-Hub-User"], "groups": groups})
        else:
            return super().get_user(handler)
        handler._token_authenticated = True  # a header, like a token: no cookie, so no XSRF check
        return user



class SteppingClock(Clock):
    """The system's clocks, except that a test can step the wall clock; the monotonic clock never steps."""

    offset = 0.0  # on the class: the server builds its own instance from config

    @classmethod
    def step(cls, seconds: float) -> None:
        cls.offset += seconds

    @classmethod
    def reset(cls) -> None:
        cls.offset = 0.0

    def wall(self) -> float:
        return time.time() + type(self).offset
