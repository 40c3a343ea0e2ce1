"""Labels: a name on an entry, in the tree and on its message (`feature.py`)."""
