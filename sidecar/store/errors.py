"""The store's own errors: raw ``sqlite3`` errors do not leave the store, they become these.

Exception tree::

    StoreError
     ├── CannotOpen         the file is not a usable database (corrupt, a directory,
     │   │                  read-only for a writer, missing for a reader)
     │   └── WorldRulesInvalid  one world's stored rules fail their checks
     ├── SchemaTooNew       the database was written by a newer Credence
     ├── SchemaBehind       an older Credence left it, and it was opened not to be migrated
     ├── DatabaseInUse      another process holds the database's writer lock
     ├── StorageFailure     SQLite refused a write we believed valid (a bug or a full disk)
     └── ApplyFailure       one event raised an unexpected error (a bug); it alone is refused
"""

from __future__ import annotations

__all__ = [
    "ApplyFailure",
    "CannotOpen",
    "DatabaseInUse",
    "SchemaBehind",
    "SchemaTooNew",
    "StorageFailure",
    "StoreError",
    "WorldRulesInvalid",
]


class StoreError(Exception):
    """Base of the store's own errors."""


class CannotOpen(StoreError):
    """The file cannot be opened as a Credence database (corrupt, a directory, read-only)."""


class SchemaTooNew(StoreError):
    """The database holds migrations this version does not know."""


class SchemaBehind(StoreError):
    """The database lacks migrations of this version, and was opened with ``upgrade=False``
    (a data directory's writer, which has them applied in its worker process instead)."""


class DatabaseInUse(StoreError):
    """Another process (a second ``credence serve``) holds the database's writer lock."""


class WorldRulesInvalid(CannotOpen):
    """A world's stored rules fail the rules' checks (a damaged or hand-edited database): that
    world refuses to open, with this one line; every other world is served as usual."""

    code = "internal_error"


class StorageFailure(StoreError):
    """SQLite refused a write: an engine bug caught by a CHECK, or the disk failed."""

    code = "internal_error"


class ApplyFailure(StoreError):
    """Applying one event raised an unexpected exception (a bug): that event alone is refused."""

    code = "internal_error"
