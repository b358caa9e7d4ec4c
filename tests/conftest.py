"""Generic fixtures shared by every test module (keep server- or feature-specific ones local),
and the one rule of running them side by side."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

try:
    import fcntl
except ImportError:  # (not on Windows: there every test just runs)
    fcntl = None  # type: ignore[assignment]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A path for a fresh SQLite database file in the test's own temporary directory."""
    return tmp_path / "credence.db"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "alone: the test measures latency against a bound, so under pytest-xdist no other "
        "test runs beside it (a neighbour's CPU would decide its figures)",
    )


@contextmanager
def _turn(config: pytest.Config, alone: bool) -> Iterator[None]:
    """Every test of a pytest-xdist run holds a shared lock while it runs, and a test marked
    ``alone`` an exclusive one: it waits for the other workers' current tests to end, and they
    wait for it. A turnstile before the lock lets no new test in while an ``alone`` test
    waits, so it is not starved. The lock files are in the run's base temporary directory,
    which its workers share (each has its own below it) and pytest clears in later runs."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None or fcntl is None:  # one process: nothing runs beside it
        yield
        return
    basetemp = config.option.basetemp  # (xdist gives each worker <the run's>/popen-gwN)
    shared = Path(basetemp).parent if basetemp else Path(tempfile.gettempdir())
    base = shared / f"credence-tests-{run}"
    with open(f"{base}.turnstile", "a") as turnstile, open(f"{base}.lock", "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    # Around setup, call and teardown, so a module's fixtures built for a test are inside.
    with _turn(item.config, item.get_closest_marker("alone") is not None):
        return (yield)
