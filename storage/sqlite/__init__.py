"""SQLite storage (the default): one database file holding every session."""

from .catalog import SqliteCatalog
from .storage import SqliteSessionStorage

__all__ = ["SqliteCatalog", "SqliteSessionStorage"]
