"""What every front end and the widgets show alike, below them all (it imports only storage): text
made safe for a terminal or a page (`sanitize.py`), a model id as a person sees it
(`model_names.py`), and what a user message carries besides its words: attached files as
`<file path>` blocks (`attached.py`), images' facts read from their first bytes (`images.py`), and
the skill or prompt template it was expanded from (`expanded.py`)."""
