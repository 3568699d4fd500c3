"""A real PostgreSQL for tests: Debian's server binaries, a private cluster under a temp dir, one database a test.

```python
with database("postgresql", tmp_path) as url:   # postgresql+psycopg://postgres@127.0.0.1:PORT/t1, dropped after
    Repository(url, clock=time.time)
```
The server starts on first use, once per test process, and stops when the process exits; where
PostgreSQL is not installed the test skips, saying so.
"""

from __future__ import annotations

import atexit
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["ABSENT", "DATABASES", "PostgresServer", "database", "find_bindir"]

# Why the PostgreSQL tests skip: said only where the server binaries cannot be found.
ABSENT = "PostgreSQL server binaries not found (Debian: apt-get install postgresql; `make test` installs it)"
_SUPERUSER = "postgres"


def find_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: pg_config's, Debian's newest, or the PATH's."""
    candidates = []
    if shutil.which("pg_config"):
        found = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=False)
        candidates.append(found.stdout.strip())
    # Debian keeps the server outside PATH; pg_config may come from libpq-dev without a server.
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda path: int(path.split("/")[-2]), reverse=True)
    if shutil.which("initdb"):
        candidates.append(str(Path(shutil.which("initdb")).resolve().parent))
    for folder in candidates:
        if folder and all((Path(folder) / tool).is_file() for tool in ("initdb", "pg_ctl")):
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """One throw-away cluster: trust authentication on 127.0.0.1 only, ``fsync=off`` (nothing here must
    survive a crash), run as the ``postgres`` user when the tests run as root (initdb refuses root)."""

    _shared: PostgresServer | None = None

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="hetero-pg-"))
        self.data = self.root / "data"
        self.port = 0
        self._names = itertools.count(1)
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                account = pwd.getpwnam(_SUPERUSER)
            except KeyError:
                raise RuntimeError(f"initdb refuses root and there is no {_SUPERUSER!r} user to run it as "
                                   "(Debian's postgresql package creates one)") from None
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self._as_user = ["runuser", "-u", _SUPERUSER, "--"]

    @classmethod
    def shared(cls) -> PostgresServer | None:
        """The process's server, started on first use and stopped at exit; None where PostgreSQL is absent."""
        if cls._shared is None:
            bindir = find_bindir()
            if bindir is None:
                return None
            server = cls(bindir)
            server.start()
            atexit.register(server.stop)
            cls._shared = server
        return cls._shared

    def _run(self, tool: str, *args: str) -> None:
        result = subprocess.run([*self._as_user, str(self.bindir / tool), *args], capture_output=True, text=True,
                                check=False, cwd=self.root)
        if result.returncode != 0:
            raise RuntimeError(f"{tool} failed ({result.returncode}): {result.stdout}{result.stderr}")

    def start(self) -> None:
        self._run("initdb", "-D", str(self.data), "-U", _SUPERUSER, "-A", "trust", "-E", "UTF8", "--no-sync",
                  "--locale=C")
        # A port that was free a moment ago can be taken before the server binds it: try another.
        for attempt in range(5):
            self.port = _free_port()
            options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off " \
                      "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
            try:
                self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-o", options,
                          "start")
                return
            except RuntimeError:
                if attempt == 4:
                    raise RuntimeError((self.root / "server.log").read_text(errors="replace")) from None

    def stop(self) -> None:
        if self.port:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            self.port = 0
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{_SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user={_SUPERUSER} dbname=postgres",
                             autocommit=True) as connection:
            connection.execute(sql)

    def create_database(self) -> str:
        """A new empty database; its SQLAlchemy URL."""
        name = f"t{next(self._names)}"
        self._admin(f"CREATE DATABASE {name}")
        return self.url(name)

    def drop_database(self, url: str) -> None:
        self._admin(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]} WITH (FORCE)")


# The databases the store is tested on: every test of the store runs once on each.
DATABASES = ("sqlite", "postgresql")


@contextmanager
def database(kind: str, folder: Path) -> Iterator[str]:
    """A fresh empty database of ``kind`` ("sqlite": a file in ``folder``), as a SQLAlchemy URL."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / 'hetero.sqlite'}"
        return
    server = PostgresServer.shared()
    if server is None:
        pytest.skip(ABSENT)
    url = server.create_database()
    try:
        yield url
    finally:
        server.drop_database(url)
