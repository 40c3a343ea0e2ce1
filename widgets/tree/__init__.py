"""The tree panel: its rows, layout, painting, navigation and filter."""
