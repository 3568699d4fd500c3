"""Workload credentials: what a kernel or job holds instead of the server's own token.

    env = credentials.environment(workload_id, env)   # a minimal base, the URL, a fresh credential
    row = credentials.authenticate(token)              # per request, in the hetero handlers only
    credentials.revoke_ended()                         # after every scheduler tick

A credential is ``hetero_wc_<id>_<secret>``: the id finds its row, and only the sha256 of the
32-byte secret is stored, compared in constant time. It works while its workload holds a
placement (admitted, starting, running) and is refused from the moment the workload leaves
those states, whether or not the revocation after the next tick has been written yet.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import secrets
from collections.abc import Callable, Iterable, Mapping

from ...catalog import Catalog
from ...credential_format import CREDENTIAL_PREFIX, format_credential, parse_credential
from ...errors import Forbidden
from ...i18n import N_, Message
from ...store import ACTIVE_STATES, Repository
from ...store.credentials import CredentialStore
from ...store.tables import WorkloadRow
from ..identity import Identity, workload_identity
from ..live_catalog import LiveCatalog, ReadsLiveCatalog

__all__ = ["CREDENTIAL_PREFIX", "DEFAULT_PASSTHROUGH", "Credentials", "inherited_environment"]

_SECRET_BYTES = 32

# What a workload inherits from the server's environment: enough to find Python, its packages,
# the user's home, locale, proxies and accelerator toolkits; never the server's own secrets.
DEFAULT_PASSTHROUGH = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR", "TEMP", "TMP",
    "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "CONDA_EXE", "CONDA_PYTHON_EXE",
    "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "ROCM_PATH", "ASCEND_*", "NEUWARE_HOME",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
    "JUPYTER_PATH", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_PLATFORM_DIRS", "IPYTHONDIR",
    "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
)


def inherited_environment(environ: Mapping[str, str], passthrough: Iterable[str],
                          secrets_: Iterable[str] = ()) -> dict[str, str]:
    """The part of a server's environment its workloads start from: the names ``passthrough`` matches
    (a trailing * a prefix), and never a value that holds one of the server's ``secrets_``."""
    patterns, hidden = tuple(passthrough), tuple(value for value in secrets_ if value)
    return {name: value for name, value in environ.items()
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
            and not any(secret in value for secret in hidden)}


class Credentials(ReadsLiveCatalog):
    """Issues, checks and revokes workload credentials, and builds the environment that carries one."""

    def __init__(self, *, catalog: Catalog | LiveCatalog, repository: Repository, server_url: str | Callable[[], str],
                 inherited: Mapping[str, str], passthrough: Iterable[str] = DEFAULT_PASSTHROUGH,
                 server_secrets: Iterable[str] = ()):
        self.live_catalog = LiveCatalog.of(catalog)
        self.store = CredentialStore(repository)
        # Read at each launch: the server's port is known only once it is bound, after extensions load (it moves
        # to the next free one when the configured port is taken).
        self._server_url = server_url
        self.inherited = inherited
        self.passthrough = tuple(passthrough)
        # Values that must never reach a workload, even through a passthrough pattern.
        self.server_secrets = tuple(value for value in server_secrets if value)

    # -- issue -------------------------------------------------------------------------------

    def issue(self, workload_id: int) -> str:
        """A new credential for one process of the workload, stored (as a digest) before it is returned."""
        secret = secrets.token_urlsafe(_SECRET_BYTES)
        credential_id = self.store.add(workload_id=workload_id, digest=_digest(secret))
        return format_credential(credential_id, secret)

    def environment(self, workload_id: int, env: Mapping[str, str], *, inherit: bool = True) -> dict[str, str]:
        """What a workload's process starts with: the passthrough part of the server's environment (unless
        it starts elsewhere, from its own), its own variables, the server's URL and a fresh credential;
        never the server's token."""
        base = inherited_environment(self.inherited, self.passthrough, self.server_secrets) if inherit else {}
        sealed = {**base, **env, "JUPYTER_HETERO_TOKEN": self.issue(workload_id)}
        if url := self.server_url:
            sealed["JUPYTER_HETERO_URL"] = url
        return sealed

    @property
    def server_url(self) -> str:
        """Where a workload reaches this server's API: the address it is bound to now."""
        return self._server_url() if callable(self._server_url) else self._server_url


    # -- check -------------------------------------------------------------------------------

    def authenticate(self, token: str) -> WorkloadRow:
        """The workload whose credential ``token`` is; a 403 naming why when it is unknown or revoked."""
        credential_id, secret = parse_credential(token)
        found = self.store.find(int(credential_id)) if credential_id.isdigit() and secret else None
        if found is None or not hmac.compare_digest(found[0].digest, _digest(secret)):
            raise Forbidden(Message(N_("unknown workload credential")), reason="credential-unknown")
        credential, workload = found
        if credential.revoked_at is None and workload.state in ACTIVE_STATES:
            return workload
        if credential.revoked_at is None:
            self.store.revoke_unless(ACTIVE_STATES, workload_id=workload.id)  # ended since the last tick
        raise Forbidden(Message(N_("this credential was revoked: workload {workload} is {state}"),
                                workload=workload.id, state=workload.state), reason="credential-revoked")

    def identity(self, *, user: str, tenant: str, workload_id: int) -> Identity:
        return workload_identity(self.catalog, user=user, tenant=tenant, workload_id=workload_id)

    # -- revoke ------------------------------------------------------------------------------

    def revoke_ended(self) -> int:
        """Revoke the credentials of every workload that no longer holds a placement."""
        return self.store.revoke_unless(ACTIVE_STATES)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
