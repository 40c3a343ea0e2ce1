"""MCP servers, skills, prompt templates and a project's trust (`feature.py`); Tab completion of
slash commands (`completion.py`)."""
