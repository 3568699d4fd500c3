"""The notebook side: the ``%hetero_*`` magics, their widgets and tables, the code a cell sends, and the
REST client they (and user code) call the server with.

    from jupyter_hetero.notebook import submit
    job = submit(template="data-preprocessing", code="total = sum(xs)", push={"xs": [1, 2, 3]}, pull=["total"])
"""

from .client import ApiError, HeteroClient, ServerNotFound, Workload, WorkloadFailed, submit

__all__ = ["ApiError", "HeteroClient", "ServerNotFound", "Workload", "WorkloadFailed", "submit"]
