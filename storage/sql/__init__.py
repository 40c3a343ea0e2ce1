"""What SQLite and PostgreSQL share: the same tables hold the same values (`rows.py`), a bulk load
places a session's entries on branch segments by one rule (`bulk.py`), and search speaks one query
language with one ranking and one kind of snippet (`search.py`). Each backend's folder has only
what its own database needs."""
