"""Files: approving an edit, the offer to restore after a move, `/restore` (`feature.py`)."""
