"""The names of the Kueue objects the export makes, which the backend's pods name in their labels: one place, so
that the two agree.

>>> queue_admission("training")
('training', 'hetero-training')
>>> dns_name("Vision Team")
'vision-team'
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["DEFAULT_PREFIX", "dns_name", "queue_admission"]

DEFAULT_PREFIX = "hetero-"  # of cluster-scoped names, so the export cannot overwrite a site's own objects


def queue_admission(queue: str) -> tuple[str, str]:
    """The LocalQueue and WorkloadPriorityClass the export makes for a catalog queue named ``queue`` without a
    ``kueue_queue`` (``c.KubernetesConfig.admission = "kueue"`` labels its pods with them; default prefix)."""
    return dns_name(queue), dns_name(DEFAULT_PREFIX + queue)


def dns_name(text: str) -> str:
    """A DNS label from a catalog name: lowercase, '-' for anything else, at most 63 characters."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "x"
    if len(name) > 63:
        # Cut, with a digest of the whole so that two long names sharing a start stay apart.
        name = name[:54].rstrip("-") + "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return name
