"""The hub's side of tenant profiles: who is spawning, what the hetero service says now, the profiles.

    c.KubeSpawner.profile_list = jupyter_hetero.hub.profile_list
    c.Spawner.pre_spawn_hook = jupyter_hetero.hub.pre_spawn_hook
    c.HeteroHub.service_url = "http://hetero:8000/services/hetero/"

The service is asked as the spawning user, with a short-lived hub token of theirs (so its answer is
that user's tenant quota and ETA, and a user sees nothing the service would not show them).
"""

from __future__ import annotations

import asyncio
import functools
import html
import json
import os
import time
from typing import Any

from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from traitlets import Float, Unicode, default
from traitlets.config import LoggingConfigurable

from ..catalog import Catalog, Localized, load_catalog
from ..errors import Forbidden
from ..platform.identity import resolve_identity
from .profiles import UNAVAILABLE, Live, build_profiles, profile_parameters

__all__ = ["HeteroHub", "SpawnRefused", "options_form", "options_from_form", "pre_spawn_hook", "profile_list"]

API_PATH = "hetero/api/v1/"
# The scope a user's short-lived token needs to reach the hetero service through the hub.
TOKEN_SCOPES = ["access:services!service=hetero"]
TOKEN_LIFETIME_S = 300
TOKEN_REUSE_S = 240

_REFUSALS = {
    "none": Localized(en="You have no compute profile: {reason}", zh="你没有可用的计算规格：{reason}"),
    "unknown": Localized(en="Profile {profile!r} is not one tenant {tenant} may start; choose one on the spawn page.",
                         zh="租户 {tenant} 不能启动规格 {profile!r}；请在启动页面重新选择。"),
    "over": Localized(en="{profile} is over tenant {tenant}'s quota now; choose another profile or wait until the "
                          "tenant's servers and jobs release some.",
                      zh="{profile} 当前超出租户 {tenant} 的配额；请选择其他规格，或等待租户的服务器和作业释放资源。"),
}


_NO_PROFILE = Localized(en="tenant {tenant} may start no interactive template on any flavor",
                        zh="租户 {tenant} 没有可在任何规格上启动的交互式模板")


@functools.lru_cache(maxsize=4)
def _catalog(path: str) -> Catalog:
    # Every spawn page asks; the catalog file changes with a hub restart, like the service's.
    return load_catalog(path)


class SpawnRefused(web.HTTPError):
    """A 403 whose sentence the hub shows as it is on the spawn page (``jupyterhub_message``)."""

    def __init__(self, message: str):
        super().__init__(403, message)
        self.jupyterhub_message = message


class HeteroHub(LoggingConfigurable):
    """Where the hub finds the hetero service and the catalog (one instance per hub process)."""

    service_url = Unicode(
        config=True,
        help="Base URL of the hetero service as the hub reaches it (e.g. http://127.0.0.1:8081/services/hetero/); "
        "default: $JUPYTER_HETERO_SERVICE_URL.",
    )
    service_token = Unicode(
        config=True,
        help="Token sent to the hetero service when the spawning user has no hub token to lend (a spawner made "
        "outside the hub); default: $JUPYTER_HETERO_SERVICE_TOKEN.",
    )
    catalog_file = Unicode(
        "", config=True,
        help="The catalog YAML the hetero service runs with (tenants, templates, flavors); empty means the shipped one.",
    )
    language = Unicode(
        "en", config=True,
        help="Language of profile names and descriptions when the spawn request does not say (en or zh).",
    )
    request_timeout = Float(10.0, config=True, help="Seconds each call to the hetero service may take.")

    @default("service_url")
    def _service_url(self) -> str:
        return os.environ.get("JUPYTER_HETERO_SERVICE_URL", "")

    @default("service_token")
    def _service_token(self) -> str:
        return os.environ.get("JUPYTER_HETERO_SERVICE_TOKEN", "")

    @property
    def catalog(self) -> Catalog:
        from ..catalog import DEFAULT_CATALOG_PATH

        return _catalog(str(self.catalog_file or DEFAULT_CATALOG_PATH))

    async def live(self, token: str, templates: list[tuple[str, dict[str, Any]]]) -> Live:
        """The tenant's quota use and one kernel preview per (template, parameters), asked as ``token``."""
        if not self.service_url or not token:
            return UNAVAILABLE
        try:
            me = await self._call(token, "tenants/me")
        except (HTTPClientError, OSError, asyncio.TimeoutError) as exc:
            self.log.warning("hetero service unavailable for profiles url=%s error=%s", self.service_url, exc)
            return UNAVAILABLE
        previews = await asyncio.gather(*(self._preview(token, name, parameters) for name, parameters in templates))
        return Live.from_api(tenant_me=me, previews=[preview for preview in previews if preview is not None])

    async def _preview(self, token: str, template: str, parameters: dict[str, Any]) -> dict | None:
        # One template the service refuses to preview (its catalog differs, a parameter is out of bounds)
        # leaves that template's profiles without live numbers, not every profile.
        try:
            return await self._call(token, "previews", {"template": template, "parameters": parameters, "kind": "kernel"})
        except (HTTPClientError, OSError, asyncio.TimeoutError) as exc:
            self.log.warning("no hetero preview for profiles template=%s error=%s", template, exc)
            return None

    async def _call(self, token: str, route: str, body: dict | None = None, method: str | None = None) -> Any:
        request = HTTPRequest(
            self.service_url.rstrip("/") + "/" + API_PATH + route,
            method=method or ("POST" if body is not None else "GET"),
            body=json.dumps(body) if body is not None else None, request_timeout=self.request_timeout,
            headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        )
        response = await AsyncHTTPClient().fetch(request)
        return json.loads(response.body)


def hub_of(spawner) -> HeteroHub:
    """The spawner's ``HeteroHub``, configured from the hub's config (jupyterhub_config.py)."""
    found = getattr(spawner, "_hetero_hub", None)
    if found is None:
        found = spawner._hetero_hub = HeteroHub(config=spawner.config, log=spawner.log)
    return found


def language_of(spawner, hub: HeteroHub) -> str:
    """``zh`` when the spawn page's request prefers Chinese, else the configured language."""
    handler = getattr(spawner, "handler", None)
    accepted = handler.request.headers.get("Accept-Language", "") if handler is not None else ""
    first = accepted.split(",")[0].strip().lower()
    if first:
        return "zh" if first.startswith("zh") else "en"
    return hub.language


def _groups(user) -> frozenset[str]:
    # The hub's User has ORM groups (with .name); REST payloads and test users give names.
    return frozenset(getattr(group, "name", group) for group in getattr(user, "groups", None) or ())


async def user_token(spawner, hub: HeteroHub) -> str:
    """A hub token of the spawning user, reused for a few minutes (a spawn asks three times: form, hook, start)."""
    kept = getattr(spawner, "_hetero_token", None)
    if kept is not None and time.monotonic() - kept[1] < TOKEN_REUSE_S:
        return kept[0]
    user = spawner.user
    if not hasattr(user, "new_api_token"):
        return hub.service_token
    try:
        token = user.new_api_token(note="jupyter-hetero spawn profiles", expires_in=TOKEN_LIFETIME_S,
                                   scopes=TOKEN_SCOPES)
    except ValueError as exc:  # the user does not hold the scope: JupyterHub.extra_user_scopes lacks it
        hub.log.warning("no hub token for hetero profiles user=%s error=%s", user.name, exc)
        return hub.service_token
    spawner._hetero_token = (token, time.monotonic())
    return token


async def profiles_for(spawner) -> tuple[list[dict[str, Any]], str, str]:
    """The spawning user's profiles, their tenant's name and the page's language (403 with no tenant)."""
    hub = hub_of(spawner)
    catalog, language = hub.catalog, language_of(spawner, hub)
    try:
        tenant = resolve_identity(catalog, spawner.user.name, _groups(spawner.user)).tenant
    except Forbidden as exc:
        raise SpawnRefused(_REFUSALS["none"].text(language).format(reason=exc.detail.get("message_zh", exc.message) if language == "zh" else exc.message)) from None
    asked = sorted({
        (template.name, json.dumps(parameters, sort_keys=True))
        for template in catalog.templates
        if template.interactive and tenant.allows_template(template.name) and tenant.allows_queue(template.queue)
        for flavor in template.flavors if flavor in tenant.quotas
        if (parameters := profile_parameters(template, catalog.flavor(flavor))) is not None
    })
    live = await hub.live(await user_token(spawner, hub), [(name, json.loads(parameters)) for name, parameters in asked])
    return build_profiles(catalog, tenant, live, language=language), tenant.name, language


async def profile_list(spawner) -> list[dict[str, Any]]:
    """``c.KubeSpawner.profile_list``: the spawning user's tenant profiles, with live capacity and ETA."""
    profiles, _tenant, _language = await profiles_for(spawner)
    return profiles


async def pre_spawn_hook(spawner) -> None:
    """``c.Spawner.pre_spawn_hook``: refuses a profile the tenant may not start, or one over its quota now."""
    profiles, tenant, language = await profiles_for(spawner)
    if not profiles:
        raise SpawnRefused(_REFUSALS["none"].text(language).format(
            reason=_NO_PROFILE.text(language).format(tenant=tenant)))
    slug = (spawner.user_options or {}).get("profile")
    chosen = next((p for p in profiles if p["slug"] == slug), None) if slug else next(
        (p for p in profiles if p.get("default")), profiles[0])
    if chosen is None:
        raise SpawnRefused(_REFUSALS["unknown"].text(language).format(profile=slug, tenant=tenant))
    if chosen["hetero"]["over_quota"]:
        raise SpawnRefused(_REFUSALS["over"].text(language).format(profile=chosen["display_name"], tenant=tenant))
    spawner.log.info("hetero profile user=%s tenant=%s profile=%s", spawner.user.name, tenant, chosen["slug"])


async def options_form(spawner) -> str:
    """``c.Spawner.options_form`` for the local spawners: the same profiles as radio buttons."""
    profiles = await profile_list(spawner)
    rows = []
    for profile in profiles:
        slug = html.escape(profile["slug"])
        checked = " checked" if profile.get("default") else ""
        rows.append(
            f'<label class="hetero-profile" for="hetero-profile-{slug}">'
            f'<input type="radio" name="profile" id="hetero-profile-{slug}" value="{slug}"{checked}>'
            f' <strong>{html.escape(profile["display_name"])}</strong><br>'
            f'<small>{html.escape(profile["description"])}</small></label><br>'
        )
    return "\n".join(rows)


def options_from_form(formdata: dict[str, list[str]]) -> dict[str, str]:
    """``c.Spawner.options_from_form`` for the local spawners: ``{"profile": slug}`` (as KubeSpawner's)."""
    slug = (formdata.get("profile") or [""])[0]
    return {"profile": slug} if slug else {}
