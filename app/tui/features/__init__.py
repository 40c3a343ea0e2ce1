"""The App's features, one module each: a feature's command, the widget requests it answers and what
it shows, together (its events are handled in `chat_view.py`, one generic message per event)."""
