"""The conversation: the windowed transcript, messages, a reply while it streams."""
