"""Sessions: resume, new, fork, name, export, info, and the sessions list (`feature.py`)."""
