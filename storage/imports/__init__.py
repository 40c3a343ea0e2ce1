"""Sessions brought into a store: the records every backend's import takes (`records.py`: read from
a Pi file in one pass, ids unique, cycles broken, the leaf marked; and the session files found in
folders), a file of any size read twice in bounded memory (`stream_scan.py`), and a batch of lines
proven valid without pydantic (`wire_check.py`)."""
