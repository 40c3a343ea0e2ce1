"""Find model servers already running on this machine (loopback only, short timeouts), and ask a
local server what it runs a model with: its context window and whether it takes images."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass

import httpx

from .catalog import default_context_window
from .types import ModelInfo

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


# ---------------------------------------------------------------- what a local server runs with
# A local server's real window is whatever it was started with (Ollama's default is a few
# thousand tokens, whatever the model was trained for), and Ollama truncates a longer prompt
# without a word, so the window is read from the server itself rather than assumed.

OLLAMA_FALLBACK_WINDOW = 4096  # what Ollama gives a model it has not loaded yet on a small GPU


@dataclass(frozen=True)
class ServerModelInfo:
    """What a local server says about one model. None: it did not say."""

    context_window: int | None
    images: bool | None = None
    source: str = ""  # where the window came from, for the person: "llama.cpp /props n_ctx"
    note: str | None = None  # advice when the window is a guess or small


def _root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


def _positive(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and value > 0:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip()) or None
    return None


async def _get_json(client: httpx.AsyncClient, method: str, url: str, body: object = None) -> object:
    try:
        resp = await client.request(method, url, json=body) if body is not None else await client.request(method, url)
        if resp.status_code != 200:
            return None
        return resp.json()
    except (httpx.HTTPError, ValueError):
        return None


def _same_model(name: object, model_id: str) -> bool:
    if not isinstance(name, str):
        return False
    # Ollama names "qwen3" and "qwen3:latest" the same model
    return name == model_id or name.removesuffix(":latest") == model_id.removesuffix(":latest")


async def _ollama(client: httpx.AsyncClient, root: str, model_id: str) -> ServerModelInfo | None:
    show = await _get_json(client, "POST", f"{root}/api/show", {"model": model_id})
    if not isinstance(show, dict):
        return None
    caps = show.get("capabilities")
    images = ("vision" in caps) if isinstance(caps, list) else None
    ps = await _get_json(client, "GET", f"{root}/api/ps")
    for loaded in (ps.get("models") or []) if isinstance(ps, dict) else []:
        if isinstance(loaded, dict) and (_same_model(loaded.get("name"), model_id) or _same_model(loaded.get("model"), model_id)):
            window = _positive(loaded.get("context_length"))
            if window:
                return ServerModelInfo(window, images, "Ollama /api/ps (the loaded model)")
    params = show.get("parameters")
    if isinstance(params, str):
        for line in params.splitlines():
            key, _, value = line.strip().partition(" ")
            if key == "num_ctx" and _positive(value.strip()):
                return ServerModelInfo(_positive(value.strip()), images, "Ollama model parameter num_ctx")
    info = show.get("model_info")
    trained = None
    if isinstance(info, dict):
        trained = next((_positive(v) for k, v in info.items() if k.endswith(".context_length") and _positive(v)), None)
    window = min(trained, OLLAMA_FALLBACK_WINDOW) if trained else OLLAMA_FALLBACK_WINDOW
    return ServerModelInfo(window, images, "Ollama default (model not loaded)",
                           note="Ollama cuts prompts longer than its window without saying so; set "
                                "OLLAMA_CONTEXT_LENGTH (e.g. 65536) on the server for agent work.")


async def _llamacpp(client: httpx.AsyncClient, root: str, model_id: str) -> ServerModelInfo | None:
    props = await _get_json(client, "GET", f"{root}/props")
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    window = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    window = window or _positive(props.get("n_ctx"))
    if not window:
        return None
    modalities = props.get("modalities")
    images = bool(modalities.get("vision")) if isinstance(modalities, dict) and "vision" in modalities else None
    return ServerModelInfo(window, images, "llama.cpp /props n_ctx")


async def _lmstudio(client: httpx.AsyncClient, root: str, model_id: str) -> ServerModelInfo | None:
    listing = await _get_json(client, "GET", f"{root}/api/v1/models")
    for model in (listing.get("models") or []) if isinstance(listing, dict) else []:
        if not isinstance(model, dict):
            continue
        instances = [i for i in model.get("loaded_instances") or [] if isinstance(i, dict)]
        if not (_same_model(model.get("key"), model_id) or any(_same_model(i.get("id"), model_id) for i in instances)):
            continue
        caps = model.get("capabilities")
        images = bool(caps.get("vision")) if isinstance(caps, dict) and "vision" in caps else None
        for inst in instances:
            config = inst.get("config")
            window = _positive(config.get("context_length")) if isinstance(config, dict) else None
            if window:
                return ServerModelInfo(window, images, "LM Studio (the loaded instance)")
        window = _positive(model.get("max_context_length"))
        if window:
            return ServerModelInfo(window, images, "LM Studio max_context_length")
    listing = await _get_json(client, "GET", f"{root}/api/v0/models")
    for model in (listing.get("data") or []) if isinstance(listing, dict) else []:
        if isinstance(model, dict) and _same_model(model.get("id"), model_id):
            kind = model.get("type")
            images = (kind == "vlm") if isinstance(kind, str) else None
            window = _positive(model.get("loaded_context_length")) or _positive(model.get("max_context_length"))
            if window:
                return ServerModelInfo(window, images, "LM Studio /api/v0/models")
    return None


async def _vllm(client: httpx.AsyncClient, root: str, model_id: str) -> ServerModelInfo | None:
    listing = await _get_json(client, "GET", f"{root}/v1/models")
    for model in (listing.get("data") or []) if isinstance(listing, dict) else []:
        if isinstance(model, dict) and _same_model(model.get("id"), model_id):
            window = _positive(model.get("max_model_len"))
            if window:
                return ServerModelInfo(window, None, "vLLM max_model_len")
    return None


_PROBES = {"ollama": _ollama, "llamacpp": _llamacpp, "lmstudio": _lmstudio, "vllm": _vllm}
LOCAL_SERVER_KINDS = tuple(_PROBES)  # provider names that are local servers of a known kind


async def detect_model_info(base_url: str, model_id: str, *, server: str | None = None,
                            timeout: float = 1.0, transport: httpx.AsyncBaseTransport | None = None
                            ) -> ServerModelInfo | None:
    """Ask the server behind `base_url` what it runs `model_id` with. `server` ("ollama",
    "llamacpp", "lmstudio", "vllm") picks the probe; otherwise each is tried in turn (llama.cpp,
    Ollama, LM Studio, vLLM). None when the server says nothing usable. Never raises."""
    order = [server] if server in _PROBES else ["llamacpp", "ollama", "lmstudio", "vllm"]
    root = _root(base_url)
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout), trust_env=False, transport=transport) as client:
            for name in order:
                assert name is not None
                found = await _PROBES[name](client, root, model_id)
                if found is not None and found.context_window:
                    return found
    except (httpx.HTTPError, OSError):
        return None
    return None


def is_local_url(base_url: str) -> bool:
    """A server on this machine or the local network (worth asking; a cloud API is not)."""
    import ipaddress
    from urllib.parse import urlparse

    host = (urlparse(base_url).hostname or "").lower()
    if host in ("localhost", "") or host.endswith(".local") or host.endswith(".localhost"):
        return bool(host)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local or address.is_unspecified


async def with_server_facts(model: ModelInfo, *, timeout: float = 1.0,
                            transport: httpx.AsyncBaseTransport | None = None) -> tuple[ModelInfo, ServerModelInfo | None]:
    """`model` with the window (and image input, when the server says) of the local server it
    runs on; unchanged for a cloud API or a server that says nothing. A window declared in
    config.toml is kept when it is smaller than the server's (the person chose it)."""
    if not is_local_url(model.base_url):
        return model, None
    found = await detect_model_info(model.base_url, model.id, server=model.provider if model.provider in _PROBES else None,
                                    timeout=timeout, transport=transport)
    if found is None or not found.context_window:
        return model, None
    declared = model.context_window if model.known and model.context_window != default_context_window() else None
    window = min(found.context_window, declared) if declared else found.context_window
    inputs = tuple(model.input)
    if found.images is True and "image" not in inputs:
        inputs = (*inputs, "image")
    elif found.images is False and "image" in inputs:
        inputs = tuple(k for k in inputs if k != "image")
    refined = dataclasses.replace(model, context_window=window, input=inputs,
                                  max_tokens=min(model.max_tokens, max(window // 4, 256)))
    return refined, found
