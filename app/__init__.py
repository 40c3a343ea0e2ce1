"""treechat: a terminal chat for LLM agents whose history is a tree.

The repository keeps `app/`, `storage/` and `widgets/` at the top; installed, they are the one
package `treechat` (this folder), `treechat.storage` and `treechat.widgets` (pyproject.toml).
"""

from __future__ import annotations

# The one place the version is written (pyproject.toml reads it: `dynamic = ["version"]`), so
# `treechat --version` answers without importlib.metadata, which costs more than the rest of it.
__version__ = "0.1.0"
