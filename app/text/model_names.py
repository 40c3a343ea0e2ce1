"""How a model id is shown to a person (stored messages name their model; the app and the widgets
show it the same way).

A local server often runs a model it was given as a file, and names it by that file's path
(llama-cpp-python's `/v1/models` says `/home/me/models/x.gguf` unless `--model_alias` is set):
the path stays the id (requests carry it, entries keep it), and a person sees the file name.
"""

from __future__ import annotations

import re

_MODEL_FILE = re.compile(r"\.(gguf|ggml|bin|safetensors|llamafile|pt|pth|onnx)$", re.IGNORECASE)
_PATH_START = re.compile(r"^(/|~|\.{1,2}[/\\]|[A-Za-z]:[/\\]|\\\\)")


def is_file_path(model_id: str) -> bool:
    """An id that is a file's path (a hub id like `Qwen/Qwen2.5-7B-Instruct` is not)."""
    if _PATH_START.match(model_id):
        return True
    return ("/" in model_id or "\\" in model_id) and bool(_MODEL_FILE.search(model_id))


def shown_model_id(model_id: str) -> str:
    """How a person sees a model id: a file path by its file name."""
    if not is_file_path(model_id):
        return model_id
    return re.split(r"[/\\]", model_id.rstrip("/\\"))[-1] or model_id
