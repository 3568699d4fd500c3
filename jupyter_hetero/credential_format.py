"""The workload credential's format, shared by who issues it (``platform/workloads/credentials.py``) and who reads it
off a request (``auth.py``), so that neither imports the other.

    token = format_credential(7, secret)        # 'hetero_wc_7_<secret>'
    token.startswith(CREDENTIAL_PREFIX)         # what the hetero handlers' identity provider looks for
    parse_credential(token)                     # ('7', secret): the credential's id and its secret, as written
"""

from __future__ import annotations

__all__ = ["CREDENTIAL_PREFIX", "format_credential", "parse_credential"]

CREDENTIAL_PREFIX = "hetero_wc_"


def format_credential(credential_id: int, secret: str) -> str:
    return f"{CREDENTIAL_PREFIX}{credential_id}_{secret}"


def parse_credential(token: str) -> tuple[str, str]:
    """The id and the secret a token names, unchecked: either may be empty or malformed."""
    credential_id, _, secret = token.removeprefix(CREDENTIAL_PREFIX).partition("_")
    return credential_id, secret
