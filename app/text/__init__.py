"""Text made safe for a terminal or a page; below every front end and the widgets."""
