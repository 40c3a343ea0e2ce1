"""A session's tree: its columns (`columns.py`, what a backend hands over), the one tree model over
them (`index.py`, `TreeIndex`), parent cycles found and broken (`cycles.py`), what a fork copies
(`fork.py`)."""
