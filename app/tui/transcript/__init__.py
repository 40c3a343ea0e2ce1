"""The transcript: what it asks for, `/copy`, `/retry` (`feature.py`), and its items, made from
entries (`items.py`)."""
