"""Find model servers already running on this machine (loopback only, short timeouts)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx

LOCAL_SERVERS = (
    ("ollama", "http://127.0.0.1:11434"),
    ("lmstudio", "http://127.0.0.1:1234"),
    ("llamacpp", "http://127.0.0.1:8080"),
    ("vllm", "http://127.0.0.1:8000"),
)


@dataclass(frozen=True)
class DetectedServer:
    provider: str
    base_url: str  # the OpenAI-compatible base (…/v1)
    models: tuple[str, ...]


async def _probe(client: httpx.AsyncClient, provider: str, root: str) -> DetectedServer | None:
    try:
        if provider == "ollama":
            resp = await client.get(f"{root}/api/tags")
            names = [m.get("name") or m.get("model") for m in resp.json().get("models", [])]
        else:
            resp = await client.get(f"{root}/v1/models")
            names = [m.get("id") for m in resp.json().get("data", [])]
        if resp.status_code != 200:
            return None
    except (httpx.HTTPError, ValueError, AttributeError, TypeError):
        return None
    return DetectedServer(provider, f"{root}/v1", tuple(n for n in names if isinstance(n, str)))


async def detect_local_servers(
    servers: tuple[tuple[str, str], ...] = LOCAL_SERVERS, timeout: float = 0.3
) -> list[DetectedServer]:
    """Servers that answered their model list, in the order given. Never raises."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout), trust_env=False) as client:
        found = await asyncio.gather(*(_probe(client, p, root) for p, root in servers))
    return [s for s in found if s is not None]
