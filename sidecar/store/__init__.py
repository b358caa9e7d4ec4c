"""The SQLite store: schema and migrations, the single group-commit writer, readers, rebuild."""

from .rebuild import RebuildReport, rebuild
from .schema import MIGRATIONS, SCHEMA_VERSION, migrate, schema_version
from .store import (
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
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "DataDir",
    "EventResult",
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
    "backup",
    "connect",
    "export_world",
    "import_world",
    "migrate",
    "rebuild",
    "schema_version",
    "world_file",
]
