"""Tools: which of them the model may use (`feature.py`)."""
