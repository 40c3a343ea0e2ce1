"""The in-memory backend (tests, --ephemeral): the same behaviour as the others, nothing written."""

from .catalog import MemoryCatalog, MemorySessionStorage

__all__ = ["MemoryCatalog", "MemorySessionStorage"]
