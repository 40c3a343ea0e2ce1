"""The tree: where its panel is (`panel.py`: beside the transcript, or a drawer over it; its width;
the screen laid out once per resize) and what choosing in it does (`moves.py`)."""
