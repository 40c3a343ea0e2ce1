"""Search: every session, every branch (`feature.py`)."""
