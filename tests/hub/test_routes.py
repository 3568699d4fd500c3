"""Every route of the hub's hetero service, through the hub's proxy, as a hub user it lets in and as nobody: the
service serves SERVICE_ROUTES (its API and the hub's OAuth callback) alone, and no answer carries its hub token.

The routes swept are every route a Jupyter server of this installation could have (jupyter_server's, JupyterLab's,
the terminals', the language servers', the hetero API's): each one the service does not list must be gone from it
(404), whoever asks. Before, a hub user's token reached the service's terminals (a shell as the service's OS user),
its contents (the hub's directory: cookie_secret, jupyterhub.sqlite, users' homes) and JupyterLab, and its error
page carried the service's own hub token (list:users, read:groups, servers).
"""

from __future__ import annotations

import json
import secrets

import pytest

from jupyter_hetero.authorizer import SERVICE_ROUTES

from ..builders import team_catalog
from ..conftest import DEMO_NODES
from ..harness import kill_runners_under
from ..reliability.routes import installed_routes, sample_path
from .harness import CHP, HubProcess, hetero_service

pytestmark = pytest.mark.slow

SERVICE = "services/hetero"
SERVICE_TOKEN = secrets.token_hex(16)
EXTENSIONS = ("jupyter_hetero", "jupyterlab", "jupyter_server_terminals", "jupyter_lsp")
# A path of a plain server that the service serves with a handler of its own: its address, where a browser signs in.
OWN_PATHS = {"/"}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not CHP.exists():
        pytest.fail(f"configurable-http-proxy is not installed at {CHP}: run `make install`")
    root = tmp_path_factory.mktemp("hub-routes")
    service, _url = hetero_service(root, team_catalog(root), DEMO_NODES, api_token=SERVICE_TOKEN)  # vision: alice
    with HubProcess.start(root, groups={}, users=("alice",), extra_config=service) as running:
        yield running.with_service(("alice",))
    kill_runners_under(root)


@pytest.fixture(scope="module")
def routes(tmp_path_factory) -> list[tuple[str, str]]:
    """(handler, path) of every route a server of this installation could have, under the service's prefix."""
    found = installed_routes(tmp_path_factory.mktemp("installed-routes"), EXTENSIONS)
    return sorted({(key, sample_path(pattern)) for key, pattern in found})


def _answer(hub: HubProcess, method: str, path: str, token: str | None) -> tuple[int, str]:
    status, answer = hub._request(f"{SERVICE}{path}", method, {} if method == "POST" else None, token=token,
                                  check=False, with_status=True)
    return status, answer if isinstance(answer, str) else json.dumps(answer)


@pytest.mark.parametrize("caller", ["alice", "anonymous"])
def test_the_service_serves_its_api_alone_and_never_its_token(hub, routes, caller):
    token = hub.tokens["alice"] if caller == "alice" else None
    assert {"jupyter_server.services.contents.handlers.ContentsHandler",
            "jupyter_server_terminals.api_handlers.TerminalRootHandler",
            "jupyterlab_server.handlers.LabHandler"} <= {key for key, _path in routes}
    wrong = []
    for key, path in [*routes, ("jupyter_server.base.handlers.Template404", "/no-such-page")]:
        for method in ("GET", "POST"):
            status, answer = _answer(hub, method, path, token)
            if SERVICE_TOKEN in answer:
                wrong.append(f"{method} {path} ({key}): {status}, the service's hub token in the answer")
            if key not in SERVICE_ROUTES and path not in OWN_PATHS and status != 404:
                wrong.append(f"{method} {path} ({key}): {status}, served: {answer[:200]!r}")
    assert not wrong, "\n".join(wrong)


def test_a_hub_user_still_has_the_api_and_its_errors_carry_no_token(hub):
    token = hub.tokens["alice"]
    status, me = hub.get(f"{SERVICE}/", token)  # the service's address: who she is, and where its API is
    assert (status, me["user"], me["api"]) == (200, "alice", f"/{SERVICE}/hetero/api/v1/"), me
    status, me = hub.get(f"{SERVICE}/hetero/api/v1/tenants/me", token)
    assert (status, me["user"], me["tenant"]) == (200, "alice", "vision")
    status, answer = _answer(hub, "GET", "/hetero/api/v1/workloads/999999", token)
    assert status == 404 and SERVICE_TOKEN not in answer, answer


def test_the_running_service_kept_no_route_beyond_its_list(hub):
    # The service names what it serves in its log when it starts: every one is in SERVICE_ROUTES.
    lines = [line for line in (hub.root / "hub.log").read_text(errors="replace").splitlines()
             if "the hub's service serves" in line]
    assert lines, "the service never said what it serves"
    served = set(json.loads(lines[-1].split("serves ", 1)[1].split(";", 1)[0]))
    assert served and served <= SERVICE_ROUTES, served
