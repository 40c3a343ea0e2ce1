"""What makes a server local, the window planned for one that does not say, and how its models
are named to a person (`treechat.text.model_names`: a file path by its file name). Stdlib only:
the catalog and the pickers use it without loading httpx."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlparse, urlsplit, urlunsplit

from treechat.text.model_names import is_file_path, shown_model_id

__all__ = ["UNKNOWN_LOCAL_WINDOW", "is_file_path", "is_local_url", "shown_model_id", "shown_ref", "shown_url"]

# A local server's window when it does not say (llama-cpp-python has no /props and puts no window
# in /v1/models): small enough that a conversation planned for it fits the servers people run by
# default (llama.cpp and Ollama 4096, llama-cpp-python 2048 learns its own on the first overflow),
# and shown as unknown ("ctx ?") until the server, config.toml or an overflow error says better.
UNKNOWN_LOCAL_WINDOW = 4096


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


def shown_ref(provider: str, model_id: str) -> str:
    return f"{provider}/{shown_model_id(model_id)}"


def shown_url(url: str) -> str:
    """A base URL as safe to show: no user:password@, no query (some put keys there)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        netloc = host + (f":{parts.port}" if parts.port else "") if "@" in parts.netloc else parts.netloc
    except ValueError:
        return "(unreadable URL)"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
