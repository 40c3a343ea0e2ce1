"""The frame around the conversation: header, status bar, footer, banner, welcome, first-frame places."""
