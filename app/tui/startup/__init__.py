"""The start: the first frame first, then the session (`feature.py`)."""
