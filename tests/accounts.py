"""Unix accounts for tests that run something as a user (a hub's servers, sandboxed workloads), and a Python
those accounts can run with this venv's packages.

    account = ensure_account("hetero-t-ann")   # its pwd entry; created, with its own home, the first time
    python = account_python()                  # an interpreter any account may execute, seeing this venv

Idempotent and shared by test modules, runs and engineers: accounts are named ``hetero-t-*`` and kept (tests
running at the same time may use the same one). Creating them needs root; elsewhere the test is skipped.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

__all__ = ["PREFIX", "account_python", "ensure_account"]

PREFIX = "hetero-t-"


def ensure_account(name: str) -> pwd.struct_passwd:
    """The account ``name`` (``hetero-t-...``), created with a home it owns if it is not there yet."""
    assert name.startswith(PREFIX), f"test accounts are named {PREFIX}*, not {name!r}"
    if os.geteuid() != 0:
        pytest.skip("creating Unix accounts needs root")
    try:
        account = pwd.getpwnam(name)
    except KeyError:
        created = subprocess.run(["useradd", "--create-home", "--user-group", "--shell", "/bin/sh", name],
                                 capture_output=True, text=True, check=False)
        # 9: made meanwhile by a test running beside this one.
        assert created.returncode in (0, 9), f"useradd {name}: {created.stderr}"
        account = pwd.getpwnam(name)
    home = Path(account.pw_dir)
    if not home.is_dir():
        home.mkdir(mode=0o700, parents=True)
        os.chown(home, account.pw_uid, account.pw_gid)
    return account


def account_python() -> str:
    """This interpreter when every account may run it; else a small venv of the system's Python of the same
    version that loads this venv's packages (a pyenv Python under /root is out of other accounts' reach)."""
    if _reachable(Path(sys.executable).resolve()) and _reachable(Path(sysconfig.get_paths()["purelib"])):
        return sys.executable
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base = next((path for path in (f"/usr/bin/{version}", f"/usr/local/bin/{version}")
                 if _reachable(Path(path).resolve())), None)
    if base is None:
        pytest.skip(f"no {version} that other accounts may run")
    bridge = Path(tempfile.gettempdir()) / f"hetero-t-python-{hashlib.sha256(sys.prefix.encode()).hexdigest()[:10]}"
    if not (bridge / "bin" / "python").exists():
        _make_bridge(base, bridge)
    return str(bridge / "bin" / "python")


def _make_bridge(base: str, bridge: Path) -> None:
    building = Path(tempfile.mkdtemp(prefix=bridge.name + ".", dir=bridge.parent))
    try:
        subprocess.run([base, "-m", "venv", "--without-pip", str(building)], check=True, capture_output=True)
        building.chmod(0o755)
        packages = sysconfig.get_paths()["purelib"]
        site = next((building / "lib").glob("python*/site-packages"))
        # addsitedir, not a plain path line: this venv's own .pth files (the editable install) must run too.
        (site / "hetero-venv.pth").write_text(f"import site; site.addsitedir({packages!r})\n", encoding="utf-8")
        for shared in ("etc", "share"):  # the server extension's config and the kernelspecs, found by sys.prefix
            (building / shared).symlink_to(Path(sys.prefix) / shared)
        building.rename(bridge)
    except OSError:
        if not (bridge / "bin" / "python").exists():
            raise
    finally:
        shutil.rmtree(building, ignore_errors=True)  # what a test beside this one built first


def _reachable(path: Path) -> bool:
    """Whether an account other than the owner may reach ``path``: each directory above it searchable by others."""
    return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.parents) and bool(
        path.stat().st_mode & (stat.S_IROTH | stat.S_IXOTH))
