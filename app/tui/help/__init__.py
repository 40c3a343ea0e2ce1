"""Help: F1 and `/help` (`feature.py`)."""
