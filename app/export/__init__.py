"""Export by format: Pi JSONL, Markdown, the HTML page, and the one safe writer of every file."""
