"""The agent's questions: one panel above the composer at a time (`asking.py`), and who asks
them: a shell command, a read outside the working folder (`permissions.py`); an edit, a restore
(`workspace/`); an MCP call, a project's servers (`extensions/`)."""
