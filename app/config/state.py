"""`<home>/state.json`: what treechat remembers between runs that is not a session or a setting
(the models chosen lately, offered first in the model picker; the context windows local servers
stated in an overflow error when they say it nowhere else).

Written atomically (a temporary file renamed over the old one), so a crash or a second treechat
never leaves half a file; a missing or unreadable file is an empty state, never an error. Keys
this version does not know are kept as they are.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from treechat.bounded_json import RawObject
from treechat.storage.json_types import Json

RECENT_MODELS = 8


class StateFile:
    def __init__(self, home: str | os.PathLike[str]) -> None:
        self.path = Path(home) / "state.json"

    def read(self) -> RawObject:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def update(self, **values: Json) -> bool:
        """Merge `values` into the file; False when it could not be written (nothing changed)."""
        data = {**self.read(), **values}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".state-", suffix=".json", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(data, out, ensure_ascii=False, indent=2)
                    out.write("\n")
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return False
        return True

    # ------------------------------------------------------------ recent models

    def recent_models(self) -> list[str]:
        """Model refs chosen lately, newest first."""
        found = self.read().get("recent_models")
        if not isinstance(found, list):
            return []
        return [ref for ref in dict.fromkeys(found) if isinstance(ref, str) and "/" in ref][:RECENT_MODELS]

    def remember_model(self, ref: str) -> bool:
        recent = [ref, *(r for r in self.recent_models() if r != ref)][:RECENT_MODELS]
        return self.update(recent_models=recent)

    # ------------------------------------------------------------ windows servers stated

    def learned_window(self, base_url: str, model_id: str) -> int | None:
        """The window a server at `base_url` stated for `model_id` when a request overflowed."""
        found = self.read().get("context_windows")
        value = found.get(f"{base_url.rstrip('/')} {model_id}") if isinstance(found, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    def remember_window(self, base_url: str, model_id: str, window: int) -> bool:
        found = self.read().get("context_windows")
        windows = dict(found) if isinstance(found, dict) else {}
        windows[f"{base_url.rstrip('/')} {model_id}"] = int(window)
        return self.update(context_windows=windows)
