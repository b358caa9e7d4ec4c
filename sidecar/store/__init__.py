"""The SQLite store: schema and migrations, the single group-commit writer, readers, rebuild."""

from .lock import WriterLock, lock_path
from .rebuild import RebuildReport, rebuild
from .schema import MIGRATIONS, SCHEMA_VERSION, migrate, schema_version
from .store import (
    ApplyFailure,
    BeliefFilter,
    CannotOpen,
    DatabaseInUse,
    EventResult,
    Reader,
    ResultStatus,
    SchemaTooNew,
    StorageFailure,
    StoreError,
    Writer,
    connect,
)

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "ApplyFailure",
    "BeliefFilter",
    "CannotOpen",
    "DatabaseInUse",
    "EventResult",
    "Reader",
    "RebuildReport",
    "ResultStatus",
    "SchemaTooNew",
    "StorageFailure",
    "StoreError",
    "Writer",
    "WriterLock",
    "connect",
    "lock_path",
    "migrate",
    "rebuild",
    "schema_version",
]
