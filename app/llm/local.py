"""What makes a server local, and how its models are named to a person (stdlib only: the catalog
and the pickers use it without loading httpx).

A local server often runs a model it was given as a file, and names it by that file's path
(llama-cpp-python's `/v1/models` says `/home/me/models/x.gguf` unless `--model_alias` is set):
the path stays the id a request carries, and a person sees the file name.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlparse

# A local server's window when it does not say (llama-cpp-python has no /props and puts no window
# in /v1/models): small enough that a conversation planned for it fits the servers people run by
# default (llama.cpp and Ollama 4096, llama-cpp-python 2048 learns its own on the first overflow),
# and shown as unknown ("ctx ?") until the server, config.toml or an overflow error says better.
UNKNOWN_LOCAL_WINDOW = 4096

_MODEL_FILE = re.compile(r"\.(gguf|ggml|bin|safetensors|llamafile|pt|pth|onnx)$", re.IGNORECASE)
_PATH_START = re.compile(r"^(/|~|\.{1,2}[/\\]|[A-Za-z]:[/\\]|\\\\)")


def is_local_url(base_url: str) -> bool:
    """A server on this machine or the local network (worth asking; a cloud API is not)."""
    host = (urlparse(base_url).hostname or "").lower()
    if host in ("localhost", "") or host.endswith(".local") or host.endswith(".localhost"):
        return bool(host)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local or address.is_unspecified


def is_file_path(model_id: str) -> bool:
    """An id that is a file's path (a hub id like `Qwen/Qwen2.5-7B-Instruct` is not)."""
    return bool(_PATH_START.match(model_id)) or ("/" in model_id or "\\" in model_id) and bool(_MODEL_FILE.search(model_id))


def shown_model_id(model_id: str) -> str:
    """How a person sees a model id: a file path by its file name."""
    if not is_file_path(model_id):
        return model_id
    name = re.split(r"[/\\]", model_id.rstrip("/\\"))[-1]
    return name or model_id


def shown_ref(provider: str, model_id: str) -> str:
    return f"{provider}/{shown_model_id(model_id)}"
