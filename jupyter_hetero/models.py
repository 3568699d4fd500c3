"""Request DTOs of the REST API, named by verb; the handlers validate input through these."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from .capability import AcceleratorFamily
from .catalog import TaskType, WorkloadKind

__all__ = ["ListNodesQuery", "ListTemplatesQuery"]


class _Query(BaseModel):
    # Unknown query parameters are errors, so a typo is reported instead of silently ignored.
    model_config = ConfigDict(extra="forbid")


class ListTemplatesQuery(_Query):
    kind: WorkloadKind | None = None
    task_type: TaskType | None = None
    mine: bool = False


class ListNodesQuery(_Query):
    flavor: str | None = None
    family: AcceleratorFamily | None = None
    emulated: bool | None = None
    state: Literal["admitted", "pending", "lost"] | None = None
