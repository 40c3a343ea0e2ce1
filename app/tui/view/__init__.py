"""The controller's events, drawn: one reconcile of the affected widgets per event (`chat_view.py`)."""
