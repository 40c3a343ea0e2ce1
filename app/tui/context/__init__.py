"""What the model is told: compaction, a summary of the branch left, the system prompt (`feature.py`)."""
