"""Shared plumbing of the load, bench and drill tools: a sidecar subprocess, RSS, percentiles,
and a story written into a scratch database (the at-size tools).

:class:`ServerProcess` starts a server as a child process (by default ``python -m
sidecar.cli serve``) on a free loopback port, waits until it accepts TCP connections, and
stops it with SIGTERM (graceful) or SIGKILL (a crash). Port 0 cannot be reported by a child,
so a free port is picked first by binding a socket to ``127.0.0.1:0``; if another process
takes it before the child binds, the start is retried on a new port.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sidecar.engine import WorldEvent

__all__ = [
    "ServerProcess",
    "free_port",
    "percentiles",
    "read_memory",
    "sidecar_command",
    "write_events",
]

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def read_memory(pid: int) -> tuple[float, float] | None:
    """``(VmHWM, VmRSS)`` of a process in MiB from ``/proc/<pid>/status``; None if gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    values: dict[str, float] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            values[key] = int(rest.split()[0]) / 1024  # kB -> MiB
    if "VmHWM" not in values or "VmRSS" not in values:
        return None
    return values["VmHWM"], values["VmRSS"]


def percentiles(
    samples: Sequence[float], points: Sequence[float] = (50, 95, 99)
) -> dict[str, float]:
    """Nearest-rank percentiles and the maximum, keyed ``p50``…, ``max`` (0 when empty)."""
    out: dict[str, float] = {}
    ordered = sorted(samples)
    n = len(ordered)
    for p in points:
        key = f"p{p:g}"
        out[key] = ordered[max(0, math.ceil(p / 100 * n) - 1)] if n else 0.0
    out["max"] = ordered[-1] if n else 0.0
    return out


def write_events(
    path: Path, world: str, events: Sequence[WorldEvent], batch: int
) -> tuple[float, int]:
    """Write ``events`` into ``world`` of a new database at ``path`` through the real
    :class:`~sidecar.store.Writer` (``synchronous=OFF``: a scratch file), ``batch`` events per
    group commit: the seconds it took, and how many batches were redone event by event."""
    from sidecar.store import Writer  # (the server-driving tools never need the store)

    writer = Writer(path, synchronous="OFF")
    try:
        start = time.perf_counter()
        for i in range(0, len(events), batch):
            writer.apply([(world, e) for e in events[i : i + batch]])
        return time.perf_counter() - start, writer.fallbacks
    finally:
        writer.close()


def sidecar_command(
    port: int,
    db: Path,
    *,
    tokens: Sequence[str] = (),
    read_tokens: Sequence[str] = (),
    extra: Sequence[str] = (),
    log_level: str = "WARNING",
) -> list[str]:
    """The argv of ``credence serve`` as a child process with this interpreter."""
    argv = [
        sys.executable, "-m", "sidecar.cli", "serve", "--host", LOOPBACK, "--port", str(port),
        "--db", str(db), "--log-level", log_level,
    ]  # fmt: skip
    for t in tokens:
        argv += ["--token", t]
    for t in read_tokens:
        argv += ["--read-token", t]
    return [*argv, *extra]


class ServerProcess:
    """A server child process on a free loopback port. Use as a context manager or
    call :meth:`start` / :meth:`stop`.

    ``argv_for(port)`` builds the command line; the default runs ``credence serve`` on ``db``.
    The child's stdout and stderr go to a log file (never a pipe, which could fill up and
    block it); :meth:`log_tail` shows its end when something goes wrong.
    """

    def __init__(
        self,
        db: Path | None = None,
        *,
        tokens: Sequence[str] = (),
        read_tokens: Sequence[str] = (),
        extra: Sequence[str] = (),
        log_level: str = "WARNING",
        argv_for: Callable[[int], list[str]] | None = None,
        log_path: Path | None = None,
        start_timeout: float = 30.0,
        late_event_days: float | None = None,
        port: int | None = None,
    ) -> None:
        self.db = db
        self.fixed_port = port  # a restart on the same port (a proxy in front knows it)
        self.tokens = tuple(tokens)
        self.read_tokens = tuple(read_tokens)
        self.extra = tuple(extra)
        self._rules_dir: tempfile.TemporaryDirectory[str] | None = None
        if late_event_days is not None:  # new worlds accept events this many days late
            self._rules_dir = tempfile.TemporaryDirectory(prefix="credence-rules-")
            rules = Path(self._rules_dir.name) / "rules.toml"
            rules.write_text(f"late_event_days = {late_event_days!r}\n", encoding="utf-8")
            self.extra += ("--rules", str(rules))
        self.log_level = log_level
        self._argv_for = argv_for
        self.start_timeout = start_timeout
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if log_path is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="credence-proc-")
            log_path = Path(self._tmp.name) / "server.log"
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def argv(self, port: int) -> list[str]:
        if self._argv_for is not None:
            return self._argv_for(port)
        assert self.db is not None, "a sidecar needs a database path"
        return sidecar_command(
            port, self.db, tokens=self.tokens, read_tokens=self.read_tokens, extra=self.extra,
            log_level=self.log_level,
        )  # fmt: skip

    @property
    def url(self) -> str:
        return f"ws://{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None, "not started"
        return self.proc.pid

    def memory(self) -> tuple[float, float] | None:
        """``(peak, current)`` resident set size of the child in MiB."""
        return None if self.proc is None else read_memory(self.proc.pid)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def start(self) -> ServerProcess:
        """Start the child and wait until it accepts connections (bounded, 3 tries on new
        ports; one on ``port`` if one was given, or after a first start: ``start`` again
        after :meth:`kill` or :meth:`stop` restarts on the same port)."""
        last = ""
        for _attempt in range(3):
            self.port = free_port() if self.fixed_port is None else self.fixed_port
            log = self.log_path.open("ab")
            try:
                self.proc = subprocess.Popen(
                    self.argv(self.port), stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )  # fmt: skip
            finally:
                log.close()
            if self._wait_ready():
                self.fixed_port = self.port
                return self
            last = self.log_tail()
            self.kill()
            if "address already in use" not in last.lower() or self.fixed_port is not None:
                break
        raise RuntimeError(f"server did not start on port {self.port}:\n{last}")

    def _wait_ready(self) -> bool:
        assert self.proc is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, self.port), 0.5):
                return True
            time.sleep(0.05)
        return False

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def wait(self, timeout: float) -> int | None:
        """Wait for the child to exit; its return code, or None if it is still running."""
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, wait up to ``timeout``, then SIGKILL. Returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            if self.wait(timeout) is None:
                self.kill()
        return self.proc.returncode

    def kill(self) -> int | None:
        """SIGKILL (a crash: nothing gets to run) and reap the child."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        return self.proc.returncode

    def close(self) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        if self._rules_dir is not None:
            self._rules_dir.cleanup()
            self._rules_dir = None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
