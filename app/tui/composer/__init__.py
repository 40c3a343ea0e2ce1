"""The composer: what it sends and what waits (`sending.py`), who a typed key or a paste is for
(`typing.py`), its text in $EDITOR (`editor.py`)."""
