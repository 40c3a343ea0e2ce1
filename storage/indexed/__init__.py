"""What the memory and JSONL backends share: a session held in this process as its entry lines
(`entries.py`, `EntryIndex`: a skeleton per line, validated when read), and the `SessionStorage`
(`storage.py`) and `SessionCatalog` (`catalog.py`) answered from it."""
