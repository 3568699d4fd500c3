"""Turn a notebook cell into a job's code: pushed variables in, shipped files beside it, pulled
variables out.

    code = job_code("result = sum(data)", push={"data": [1, 2, 3]}, pull=["result"])
    # ... the job runs `code`; afterwards its archive holds outputs/hetero_pull.pkl:
    values = read_pulled(archived_bytes)   # {"result": 6}

Values travel pickled (cloudpickle when installed, for lambdas and local classes), base64 inside
the code, so the job needs nothing but the code itself.
"""

from __future__ import annotations

import base64
import io
import pickle
from pathlib import Path
from typing import Any

__all__ = ["PULL_FILE", "PUSH_LIMIT_BYTES", "PushError", "job_code", "read_pulled"]

PULL_FILE = "hetero_pull.pkl"
# Pushed values and files ride inside the submission; beyond this, ship data through storage.
PUSH_LIMIT_BYTES = 64 * 1024 * 1024


class PushError(ValueError):
    """A value could not be sent to the job (unpicklable, or too large)."""


def _dumps(value: Any) -> bytes:
    try:
        import cloudpickle  # noqa: PLC0415 - optional: lambdas and interactively defined classes

        return cloudpickle.dumps(value)
    except ImportError:
        return pickle.dumps(value)


def _blob(data: bytes, what: str) -> str:
    if len(data) > PUSH_LIMIT_BYTES:
        raise PushError(f"{what} is {len(data) / 1e6:.0f} MB; at most {PUSH_LIMIT_BYTES // 2**20} MiB can be pushed")
    return base64.b64encode(data).decode()


def job_code(cell: str, *, push: dict[str, Any] | None = None, pull: list[str] | None = None,
             files: dict[str, bytes] | None = None) -> str:
    """The job's Python source for ``cell``, with pushed values, shipped files and pulled names."""
    lines = ["import base64 as _hb, os as _ho, pickle as _hp"]
    if files:
        # Shipped files go to a folder of their own, which becomes the cell's working directory.
        lines += [
            "_hd = _ho.path.join(_ho.environ.get('HETERO_OUTPUT_DIR', '.'), '..', 'inputs')",
            "_ho.makedirs(_hd, exist_ok=True)",
        ]
        for name, data in files.items():
            lines.append(f"open(_ho.path.join(_hd, {Path(name).name!r}), 'wb').write(_hb.b64decode({_blob(data, name)!r}))")
        lines.append("_ho.chdir(_hd)")
    for name, value in (push or {}).items():
        try:
            data = _dumps(value)
        except Exception as exc:  # noqa: BLE001 - pickling can fail in many ways; all mean "cannot push this"
            raise PushError(f"cannot push {name!r}: {exc}") from None
        lines.append(f"{name} = _hp.loads(_hb.b64decode({_blob(data, name)!r}))")
    lines += ["", cell, ""]
    if pull:
        lines += [
            f"_hv = {{_hn: globals()[_hn] for _hn in {list(pull)!r} if _hn in globals()}}",
            f"with open(_ho.path.join(_ho.environ['HETERO_OUTPUT_DIR'], {PULL_FILE!r}), 'wb') as _hf:",
            "    _hp.dump(_hv, _hf)",
        ]
    return "\n".join(lines) + "\n"


def read_pulled(data: bytes) -> dict[str, Any]:
    """The values a job pulled back, from its archived pull file."""
    return pickle.load(io.BytesIO(data))
