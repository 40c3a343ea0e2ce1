"""The side-by-side view of one prompt's replies from several models (issue 39)."""
