"""The SQLite store: schema and migrations, the single group-commit writer, readers, rebuild."""

from .lock import WriterLock, lock_path
from .pool import Availability, HandlePool
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
from .worlds import (
    DEFAULT_MAX_OPEN_WORLDS,
    DataDir,
    SingleFile,
    WorldInfo,
    WorldNotFound,
    WorldsError,
    WorldStore,
    backup,
    export_world,
    import_world,
    world_file,
)

__all__ = [
    "DEFAULT_MAX_OPEN_WORLDS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "ApplyFailure",
    "Availability",
    "BeliefFilter",
    "CannotOpen",
    "DataDir",
    "DatabaseInUse",
    "EventResult",
    "HandlePool",
    "Reader",
    "RebuildReport",
    "ResultStatus",
    "SchemaTooNew",
    "SingleFile",
    "StorageFailure",
    "StoreError",
    "WorldInfo",
    "WorldNotFound",
    "WorldStore",
    "WorldsError",
    "Writer",
    "WriterLock",
    "backup",
    "connect",
    "export_world",
    "import_world",
    "lock_path",
    "migrate",
    "rebuild",
    "schema_version",
    "world_file",
]
