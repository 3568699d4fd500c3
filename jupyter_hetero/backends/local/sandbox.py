"""The command line that runs one workload in a bubblewrap sandbox, built from what it may see.

    spec = SandboxSpec(writable=(Path("/srv/work/jobs/7/attempts/1"), Path("/home/alice")),
                       hidden=(Path("/home"), Path("/srv/work")), account=Account("alice", 1001, 1001))
    argv = sandbox_argv(spec, ["python", "-m", "jupyter_hetero.kernel.runner", ...])

Pure: nothing here looks at the file system or the process table; ``isolation.py`` decides what a
workload's spec holds. The sandbox has its own process namespace (only its own processes in its
``/proc``), the host's file system read-only, empty directories over what is hidden, its own
``/tmp`` and ``/dev/shm``, and the network of the host (kernels and services listen on loopback).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Account", "SandboxSpec", "SandboxTools", "sandbox_argv"]

# Signals the scheduler and jupyter_client send to a workload's whole process group. bwrap's outer
# process is in that group and would die of them at once (it forwards nothing), cutting the work's
# graceful stop short: it ignores them, and the workload's command gets them back at their default.
_GROUP_SIGNALS = "INT,TERM"
# Empty directories made where a visible path lies under a hidden one: readable to the account the
# workload runs as (bwrap would make them private to root).
_PASSABLE = "0755"
_SHARED_SCRATCH = "1777"  # /tmp and /dev/shm: anyone may create, only the owner may remove


@dataclass(frozen=True)
class Account:
    """The Unix account a workload runs as, when not the server's own."""

    name: str
    uid: int
    gid: int


@dataclass(frozen=True)
class SandboxSpec:
    """What one workload sees beyond a read-only host: paths shown writable, paths shown read-only
    although under a hidden one (the interpreter, a kernel's connection file), paths hidden behind
    an empty directory, device nodes passed through, and the account it runs as (None: the server's).

    The deepest rule for a path wins; for one path named twice, writable beats readable beats hidden."""

    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    masked: tuple[Path, ...] = ()  # files shown empty wherever they would be visible (the store's)
    devices: tuple[Path, ...] = ()
    account: Account | None = None
    cwd: Path | None = None
    # A kernel ends with the server that started it, as outside a sandbox; a job outlives a restart of the server.
    die_with_server: bool = False
    unset_env: tuple[str, ...] = ()  # variables that mean nothing inside (a parent pid from outside the namespace)


@dataclass(frozen=True)
class SandboxTools:
    """Where the programs the sandbox is made of are."""

    bwrap: str = "bwrap"
    setpriv: str = "setpriv"
    env: str = "env"


_HIDE, _SHOW, _WRITE = 0, 1, 2  # what a path's mount does, in the order a tie is applied
_SCRATCH = Path("/tmp")  # hidden like the rest: each workload gets its own


def sandbox_argv(spec: SandboxSpec, command: list[str], tools: SandboxTools = SandboxTools()) -> list[str]:
    """``command`` run inside the sandbox ``spec`` describes."""
    argv = [tools.env, f"--ignore-signal={_GROUP_SIGNALS}", tools.bwrap, "--unshare-pid",
            "--ro-bind", "/", "/", "--dev", "/dev", "--perms", _SHARED_SCRATCH, "--tmpfs", "/dev/shm",
            "--proc", "/proc"]
    for device in spec.devices:
        argv += ["--dev-bind", str(device), str(device)]
    argv += _mounts(spec)
    if spec.cwd is not None:
        argv += ["--chdir", str(spec.cwd)]
    if spec.die_with_server:
        argv.append("--die-with-parent")
    if spec.account is not None:
        # bwrap runs as root and keeps only what setpriv needs to become the account, which then holds none.
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                 tools.setpriv, f"--reuid={spec.account.uid}", f"--regid={spec.account.gid}", "--init-groups",
                 "--inh-caps=-all"]
    else:
        argv.append("--")
    unset = [option for name in spec.unset_env for option in ("-u", name)]
    return [*argv, tools.env, f"--default-signal={_GROUP_SIGNALS}", *unset, *command]


def _mounts(spec: SandboxSpec) -> list[str]:
    rules: dict[Path, int] = {_SCRATCH: _HIDE}
    for kind, paths in ((_HIDE, spec.hidden), (_SHOW, spec.readable), (_WRITE, spec.writable)):
        for path in paths:
            rules[path] = max(kind, rules.get(path, kind))
    argv: list[str] = []
    applied: dict[Path, int] = {}
    # Parents first, so a deeper rule lands on top of the shallower one it refines.
    for path in sorted(rules, key=lambda p: (len(p.parts), str(p))):
        kind = rules[path]
        covering = _covering(applied, path)
        if covering is not None and applied[covering] == kind != _WRITE:
            continue  # already hidden, or already shown as it would be
        if covering is not None and applied[covering] == _HIDE:
            # Below a hidden directory a path's parents exist only once made, in the empty directory.
            for parent in reversed(path.parents):
                if parent.is_relative_to(covering) and parent != covering:
                    argv += ["--perms", _PASSABLE, "--dir", str(parent)]
        if kind == _HIDE:
            argv += ["--perms", _SHARED_SCRATCH if path == _SCRATCH else _PASSABLE, "--tmpfs", str(path)]
        else:
            argv += ["--bind" if kind == _WRITE else "--ro-bind", str(path), str(path)]
        applied[path] = kind
    for path in spec.masked:
        covering = _covering(applied, path)
        if covering is None or applied[covering] != _HIDE:
            argv += ["--ro-bind", "/dev/null", str(path)]
    return argv


def _covering(applied: dict[Path, int], path: Path) -> Path | None:
    """The deepest path already mounted above ``path``."""
    return max((p for p in applied if path.is_relative_to(p) and p != path), key=lambda p: len(p.parts), default=None)
