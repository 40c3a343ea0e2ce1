"""treechat: a terminal chat for LLM agents whose history is a tree.

The repository keeps `app/`, `storage/` and `widgets/` at the top; installed, they are the one
package `treechat` (this folder), `treechat.storage` and `treechat.widgets` (pyproject.toml).
"""

from __future__ import annotations

from importlib import metadata

try:
    __version__ = metadata.version("treechat")
except metadata.PackageNotFoundError:  # a checkout that was never installed
    __version__ = "0+unknown"
