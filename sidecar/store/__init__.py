"""The SQLite store: schema and migrations, the single group-commit writer, readers, rebuild."""

from .rebuild import RebuildReport, rebuild
from .schema import MIGRATIONS, SCHEMA_VERSION, migrate, schema_version
from .store import (
    BeliefFilter,
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
    "BeliefFilter",
    "EventResult",
    "Reader",
    "RebuildReport",
    "ResultStatus",
    "SchemaTooNew",
    "StorageFailure",
    "StoreError",
    "Writer",
    "connect",
    "migrate",
    "rebuild",
    "schema_version",
]
