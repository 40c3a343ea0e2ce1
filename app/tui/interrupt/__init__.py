"""Esc, Ctrl+C and Ctrl+Q: stopping what runs, and quitting with what was typed kept (`feature.py`)."""
