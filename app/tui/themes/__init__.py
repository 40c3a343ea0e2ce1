"""The theme, kept in config.toml (`feature.py`)."""
