"""What each workload on this machine may see: the sandbox of a job's replica or a kernel.

A workload sees the host read-only, minus what is hidden: the server's runtime directory (its
``jpserver-*.json`` with its token, other kernels' connection files), its Jupyter configuration,
its store and work directory (other workloads' logs, exit records, outputs), ``/home``, ``/root``
and the folder of every user's directory. It writes its own job folders (attempt, outputs,
checkpoints), its working directory and its submitter's directory, and nothing else. With
``unix_accounts`` (a server running as root whose users are the machine's accounts) it runs as its
submitter's account, whose home it sees too; the interpreter it runs on stays visible wherever it lives.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import jupyter_hetero

from ...i18n import N_
from ..base import Launch
from .sandbox import Account, SandboxSpec, SandboxTools, sandbox_argv

__all__ = ["NoAccount", "WorkloadIsolation", "accelerator_device_nodes", "find_sandbox", "interpreter_paths", "store_files"]

# The lowest uid a workload may run as: below it are root and the system's own accounts.
FIRST_USER_UID = 1000
# Accelerators' device nodes (NVIDIA, AMD, Intel, Huawei Ascend, Cambricon, Hygon): passed through, since the
# sandbox's /dev holds only the basic ones. Which devices a workload uses is set by its visibility variables.
_DEVICE_PATTERNS = ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/dri", "/dev/kfd", "/dev/accel", "/dev/davinci*",
                    "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/cambricon*", "/dev/mlu*", "/dev/hydcu*")


class NoAccount(PermissionError):
    """A workload's submitter has no Unix account it may run as."""


# Variables naming the root of a toolchain whose programs the PATH reaches through shims or activation
# scripts (pyenv's shims run its libexec and read its version file; conda's and venv's prefixes hold them).
_TOOLCHAIN_ROOTS = ("PYENV_ROOT", "CONDA_PREFIX", "VIRTUAL_ENV")


def interpreter_paths(environ: dict[str, str] | None = None) -> tuple[Path, ...]:
    """Where the Python that runs the runner and kernels lives, and the programs a workload's PATH names:
    shown read-only even inside a hidden home (a command such as ``python`` resolves as it does for the server).

    A toolchain holds programs, not secrets; what is private in the same home (runtime, data, config) stays hidden."""
    environ = os.environ if environ is None else environ
    path = [entry for entry in environ.get("PATH", "").split(os.pathsep) if entry]
    # A version manager's shims (pyenv, rbenv, asdf) run its own scripts and versions from the folder above them.
    managers = [os.path.dirname(entry.rstrip("/")) for entry in path if os.path.basename(entry.rstrip("/")) == "shims"]
    places = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              *site.getsitepackages(), site.getusersitepackages(),
              # An editable install imports the package from its source tree.
              str(Path(jupyter_hetero.__file__).resolve().parent.parent),
              *path, *managers, *(environ.get(name, "") for name in _TOOLCHAIN_ROOTS)}
    return tuple(sorted({Path(p).resolve() for p in places if p and os.path.isabs(p) and Path(p).is_dir()}))


def accelerator_device_nodes() -> tuple[Path, ...]:
    return tuple(sorted(Path(p) for pattern in _DEVICE_PATTERNS for p in glob.glob(pattern)))


@dataclass(frozen=True)
class WorkloadIsolation:
    """The sandbox policy of one server (``HeteroApp`` builds it): ``job_argv`` and ``kernel_argv`` wrap a
    workload's command line in its sandbox."""

    server_dirs: tuple[Path, ...]  # the server's runtime, configuration, store and work directories
    root_dir: Path  # everyone's directory, unless user_root_template names one per user
    user_root_template: str = ""
    owner: str = ""  # the server's owner, whose workloads also see the server account's home
    unix_accounts: bool = False  # workloads run as their submitter's Unix account (the server runs as root)
    store_files: tuple[Path, ...] = ()  # the SQLite store's files, masked wherever a visible folder holds them
    tools: SandboxTools = SandboxTools()
    interpreter: tuple[Path, ...] = ()
    devices: tuple[Path, ...] = ()

    def job_argv(self, launch: Launch, command: list[str]) -> list[str]:
        """A job's or service's replica: its runner in the sandbox, writing its own folders."""
        user = launch.placed.user if launch.placed is not None else self.owner
        own = [launch.exit_path.parent, launch.log_path.parent, launch.cwd]
        own += [Path(launch.env[name]) for name in ("HETERO_OUTPUT_DIR", "HETERO_CHECKPOINT_DIR") if launch.env.get(name)]
        account = self.account(user)
        if account is not None:
            for folder in own:  # made by the server (root): the account writes its exit record and outputs there
                if folder.is_dir() and not folder.is_relative_to(self.user_root(user)):
                    os.chown(folder, account.uid, account.gid)
        return sandbox_argv(self.spec(user, own, account=account, cwd=launch.cwd), command, self.tools)

    def kernel_argv(self, *, user: str, cwd: Path | None, connection_file: Path, command: list[str]) -> list[str]:
        """A kernel: its own connection file shown (the rest of the runtime directory stays hidden)."""
        account = self.account(user)
        if account is not None:
            os.chown(connection_file, account.uid, account.gid)
        spec = self.spec(user, [cwd] if cwd else [], account=account, cwd=cwd, readable=(connection_file,))
        # ipykernel takes a parent of pid 1 (bwrap's init, in the sandbox) for its parent's death and exits: it
        # is told of no parent, and the sandbox ends with the server instead.
        spec = replace(spec, die_with_server=True, unset_env=("JPY_PARENT_PID",))
        return sandbox_argv(spec, command, self.tools)

    def spec(self, user: str, own: list[Path], *, account: Account | None, cwd: Path | None,
             readable: tuple[Path, ...] = ()) -> SandboxSpec:
        root = self.user_root(user)
        writable = [*own, root]
        shown = [*self.interpreter, *readable]
        if account is not None:
            writable.append(Path(pwd.getpwuid(account.uid).pw_dir))
        elif user == self.owner:
            shown.append(Path.home())  # the owner's own files, read-only: the account is theirs
        return SandboxSpec(
            writable=_existing(writable), readable=_existing(shown), hidden=_existing(self._hidden()),
            masked=tuple(f for f in self.store_files if f.exists()), devices=self.devices, account=account,
            cwd=cwd if cwd is not None and cwd.is_dir() else None)

    def user_root(self, user: str) -> Path:
        if not self.user_root_template:
            return self.root_dir
        return Path(self.user_root_template.replace("{username}", user)).resolve()

    def account(self, user: str) -> Account | None:
        """The account ``user``'s workloads run as: None (the server's) unless ``unix_accounts``."""
        if not self.unix_accounts:
            return None
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            raise NoAccount(N_("user {user} has no Unix account on this machine, which runs every workload as "
                               "its submitter's account").format(user=user)) from None
        if entry.pw_uid < FIRST_USER_UID:
            raise NoAccount(N_("user {user} is a system account (uid {uid}); workloads run only as user accounts "
                               "(uid {first} or above)").format(user=user, uid=entry.pw_uid, first=FIRST_USER_UID))
        return Account(entry.pw_name, entry.pw_uid, entry.pw_gid)

    def _hidden(self) -> list[Path]:
        hidden = [*self.server_dirs, Path("/home"), Path("/root")]
        if "{username}" in self.user_root_template:
            # Every user's directory: the folder above the one that names the user.
            named = self.user_root_template.split("{username}")[0]
            hidden.append(Path(named if named.endswith("/") else os.path.dirname(named)).resolve())
        return hidden


def _existing(paths) -> tuple[Path, ...]:
    found = []
    for path in paths:
        path = Path(path).resolve()
        if path.exists() and path != Path("/") and path not in found:
            found.append(path)
    return tuple(found)


def find_sandbox() -> tuple[SandboxTools | None, str]:
    """bubblewrap and the tools around it, tried once: (the tools, "") when a sandbox starts here, else
    (None, why not)."""
    found = {name: shutil.which(name) for name in ("bwrap", "setpriv", "env")}
    missing = sorted(name for name, path in found.items() if path is None)
    if missing:
        return None, f"{', '.join(missing)} not found (Debian: apt-get install bubblewrap)"
    tools = SandboxTools(**found)
    try:
        # The smallest sandbox a workload gets: a kernel that forbids user namespaces, or a container
        # without the right to mount, fails here rather than at each launch.
        probe = subprocess.run(sandbox_argv(SandboxSpec(), ["true"], tools), capture_output=True, timeout=30,
                               stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"bwrap did not run: {exc}"
    if probe.returncode != 0:
        return None, f"bwrap cannot make a sandbox here: {probe.stderr.decode(errors='replace').strip()}"
    return tools, ""


def store_files(db_url: str) -> tuple[Path, ...]:
    """A SQLite store's file and its companions (journal, WAL, shared memory); nothing for a database server."""
    if not db_url.startswith("sqlite:///"):
        return ()
    database = Path(db_url.removeprefix("sqlite:///").split("?")[0])
    if not database.is_absolute() or str(database) in ("", ":memory:"):
        return ()
    return tuple(database.with_name(database.name + suffix) for suffix in ("", "-journal", "-wal", "-shm"))
