"""The SQLite store: schema and migrations, the single group-commit writer, readers, rebuild.

Modules by responsibility: :mod:`.errors` (the store's exceptions), :mod:`.connection`
(opening a file), :mod:`.rows` (engine values to rows and back), :mod:`.cache` (the writer's
write-through cache), :mod:`.overlay` (what a batch's fold reads through), :mod:`.writer`
(the one writer), :mod:`.reader` (queries), :mod:`.schema`, :mod:`.rebuild`, and the world
files (:mod:`.worlds`, :mod:`.pool`, :mod:`.lock`, :mod:`.filenames`, :mod:`.renames`,
:mod:`.vacuum`).
"""

from .connection import connect
from .errors import (
    ApplyFailure,
    CannotOpen,
    DatabaseInUse,
    SchemaBehind,
    SchemaTooNew,
    StorageFailure,
    StoreError,
    WorldRulesInvalid,
)
from .export import export_world, import_world
from .lock import WriterLock, data_dir_lock, lock_path
from .pool import Availability, HandlePool, open_failure
from .reader import BeliefFilter, Reader
from .rebuild import RebuildReport, rebuild
from .schema import MIGRATIONS, SCHEMA_VERSION, migrate, missing_migrations, schema_version
from .vacuum import Vacuumed, vacuum
from .worlds import (
    DEFAULT_MAX_OPEN_WORLDS,
    Build,
    DataDir,
    SingleFile,
    WorldInfo,
    WorldNotFound,
    WorldsError,
    WorldStore,
    backup,
    check_world_id,
    list_worlds,
    read_source,
    run_build,
    world_file,
)
from .writer import EventResult, ResultStatus, Writer

__all__ = [
    "DEFAULT_MAX_OPEN_WORLDS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "ApplyFailure",
    "Availability",
    "BeliefFilter",
    "Build",
    "CannotOpen",
    "DataDir",
    "DatabaseInUse",
    "EventResult",
    "HandlePool",
    "Reader",
    "RebuildReport",
    "ResultStatus",
    "SchemaBehind",
    "SchemaTooNew",
    "SingleFile",
    "StorageFailure",
    "StoreError",
    "Vacuumed",
    "WorldInfo",
    "WorldNotFound",
    "WorldRulesInvalid",
    "WorldStore",
    "WorldsError",
    "Writer",
    "WriterLock",
    "backup",
    "check_world_id",
    "connect",
    "data_dir_lock",
    "export_world",
    "import_world",
    "list_worlds",
    "lock_path",
    "migrate",
    "missing_migrations",
    "open_failure",
    "read_source",
    "rebuild",
    "run_build",
    "schema_version",
    "vacuum",
    "world_file",
]
