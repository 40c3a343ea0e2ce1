"""Models: which model answers and how hard it thinks (`feature.py`), and what the pickers offer
(`choices.py`)."""
