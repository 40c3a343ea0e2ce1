"""One prompt to several models: `/compare` and the side-by-side view of the replies (issue 39)."""
