"""Generic fixtures shared by every test module (keep server- or feature-specific ones local)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A path for a fresh SQLite database file in the test's own temporary directory."""
    return tmp_path / "credence.db"
