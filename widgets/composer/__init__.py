"""The composer and the queue tray above it."""
