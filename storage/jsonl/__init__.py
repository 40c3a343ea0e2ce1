"""The JSONL backend: one Pi-compatible file per session, in one folder (`--storage jsonl`).

`storage.py` is one session's file (appends under a lock, other writers folded in), `files.py` the
locked reads and writes of it, `catalog.py` the folder, `summaries.py` the list's cache beside the
files, `feed.py` what other processes write. The file format is `storage/session_file.py`'s.
"""

from .catalog import JsonlCatalog
from .storage import JsonlSessionStorage

__all__ = ["JsonlCatalog", "JsonlSessionStorage"]
