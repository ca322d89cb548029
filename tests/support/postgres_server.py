"""A real PostgreSQL server for the tests and benchmarks, started from the machine's binaries.

CI installs Debian's `postgresql` package (.ci/run). initdb refuses to run as root, and CI runs as
root, so the server then runs as the `postgres` user the package creates.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path


def binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """`with PostgresServer() as pg: pg.new_database()` gives a postgresql:// URL of an empty database."""

    def __init__(self, *, durable: bool = False) -> None:
        self.bin = binaries()
        if self.bin is None:
            raise RuntimeError("no PostgreSQL server binaries (apt-get install postgresql)")
        self.durable = durable
        self.dir = Path(tempfile.mkdtemp(prefix="crow-pg-"))
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def _as_user(self, *command: str) -> list[str]:
        if os.geteuid() != 0:
            return list(command)
        return ["runuser", "-u", "postgres", "--", *command]

    def start(self) -> PostgresServer:
        data = self.dir / "data"
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        init = self._as_user(
            str(self.bin / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"
        )
        subprocess.run(init, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        fast = [] if self.durable else ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        server = self._as_user(
            str(self.bin / "postgres"),
            "-D",
            str(data),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-k",
            str(self.dir),
            "-c",
            "max_connections=400",
            *fast,
        )
        self.proc = subprocess.Popen(server, stdout=subprocess.DEVNULL, stderr=open(self.dir / "server.log", "wb"))
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if self.proc is None or self.proc.poll() is not None or time.monotonic() > deadline:
                    log = (self.dir / "server.log").read_text(errors="replace")
                    raise RuntimeError(f"PostgreSQL did not start:\n{log}") from None
                time.sleep(0.1)

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        name = f"crow_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self._postmaster_signal(signal.SIGTERM)  # PostgreSQL's smart shutdown
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _postmaster_signal(self, sig: signal.Signals) -> None:
        """Signal the server itself: as root, self.proc is runuser, which passes a SIGTERM on but then
        waits 2 s before it exits."""
        assert self.proc is not None
        pid = self.proc.pid
        try:
            server = int((self.dir / "data" / "postmaster.pid").read_text().split()[0])
            stat = Path(f"/proc/{server}/stat").read_text()
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:  # runuser's child, not a recycled pid
                pid = server
        except (OSError, ValueError, IndexError):
            pass  # not started, or already gone: runuser (or the server itself) gets the signal
        os.kill(pid, sig)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
