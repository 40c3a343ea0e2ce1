"""Settings (config.toml), where files live, remembered choices, where keys come from."""
