"""Find model servers already running on this machine (loopback only), and ask a local server
what it runs a model with: its context window and whether it takes images.

Every answer is bounded (issue 21): at most `MAX_ANSWER_BYTES` per answer, and each question
(finding servers, asking about one model) ends within its total time, however slowly a server
trickles bytes; a server that says too much or too late counts as one that said nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

import httpx

from treechat import bounded_json

from .content_encoding import ACCEPT, body_chunks
from .local import is_local_url
from .proxy import client_for, route_for, ssl_context
from .types import ModelInfo

__all__ = ["LOCAL_SERVERS", "DetectedServer", "ServerModelInfo", "Unanswered", "UrlServer", "ask_url_servers",
           "detect_local_servers", "detect_model_info", "is_local_url", "refine", "root_of", "servers_to_probe",
           "with_server_facts"]

LOCAL_SERVERS = (
    ("ollama", "http://127.0.0.1:11434"),
    ("lmstudio", "http://127.0.0.1:1234"),
    ("llamacpp", "http://127.0.0.1:8080"),
    ("vllm", "http://127.0.0.1:8000"),
)
MAX_ANSWER_BYTES = 1_000_000  # a model list or /props is kilobytes; an answer that never ends is cut here
DETECT_TIMEOUT = 1.0  # finding the servers, all ports at once, in all
PROBE_TIMEOUT = 3.0  # asking one server about one model (a few requests), in all
URL_SERVER_TIMEOUT = 5.0  # asking a remote server named by its URL for its models, in all (TLS, a proxy)


@dataclass(frozen=True)
class DetectedServer:
    provider: str
    base_url: str  # the OpenAI-compatible base (…/v1)
    models: tuple[str, ...]
    by_url: bool = False  # a server the person named by its URL (UrlServer), not found on a usual port


@dataclass(frozen=True)
class UrlServer:
    """An OpenAI-compatible server the person named by its URL (OPENAI_BASE_URL, or a provider's
    base_url in config.toml that lists no models): what it serves is what its `/models` lists."""

    provider: str
    base_url: str
    source: str  # where the URL was set: "OPENAI_BASE_URL", "config.toml"
    api_key: str | None = field(default=None, repr=False)  # sent as its bearer token, never shown

    @property
    def local(self) -> bool:
        return is_local_url(self.base_url)


@dataclass(frozen=True)
class Unanswered:
    """A server named by its URL that did not list its models, and why (words for a person)."""

    server: UrlServer
    reason: str
    status: int | None = None  # the HTTP status it answered with, if it answered

    @property
    def refused_key(self) -> bool:
        return self.status in (401, 403)


class _TooLong(Exception):
    pass


async def _fetch_json(client: httpx.AsyncClient, method: str, url: str, body: object = None,
                      headers: dict[str, str] | None = None) -> tuple[object, str | None, int | None]:
    """The JSON a 200 answer holds, read to at most MAX_ANSWER_BYTES, or None and why not; and
    the answer's status."""
    try:
        content = None if body is None else json.dumps(body).encode()
        sent = {**({} if body is None else {"Content-Type": "application/json"}), **(headers or {})}
        async with client.stream(method, url, content=content, headers=sent or None) as resp:
            if resp.status_code != 200:
                return None, f"it answered HTTP {resp.status_code}", resp.status_code
            data = bytearray()
            async for chunk in body_chunks(resp):  # (decompressed a piece at a time)
                data += chunk
                if len(data) > MAX_ANSWER_BYTES:
                    raise _TooLong()
        return bounded_json.loads(bytes(data)), None, 200
    except _TooLong:
        return None, f"its answer is over {MAX_ANSWER_BYTES // 1_000_000} MB", 200
    except ValueError:
        return None, "its answer is not JSON", 200
    except httpx.TimeoutException:
        return None, "it did not answer in time", None
    except httpx.ConnectError:
        return None, "nothing answers at that address", None
    except (httpx.HTTPError, OSError) as err:
        return None, f"it cannot be reached ({type(err).__name__})", None


async def _read_json(client: httpx.AsyncClient, method: str, url: str, body: object = None) -> object:
    """The JSON a 200 answer holds, read to at most MAX_ANSWER_BYTES; None for anything else."""
    return (await _fetch_json(client, method, url, body))[0]


def _model_ids(listing: object, provider: str = "") -> tuple[str, ...] | None:
    """The model ids a listing names, in its order (None: it is no listing). Ollama's own
    `/api/tags` says `models`; every OpenAI-compatible `/models` says `data`."""
    if not isinstance(listing, dict):
        return None
    found = listing.get("models" if provider == "ollama" else "data")
    rows = [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []
    names = [m.get("name") or m.get("model") for m in rows] if provider == "ollama" else [m.get("id") for m in rows]
    return tuple(dict.fromkeys(n for n in names if isinstance(n, str) and n))


async def _probe(client: httpx.AsyncClient, provider: str, root: str) -> DetectedServer | None:
    listing = await _read_json(client, "GET", f"{root}/api/tags" if provider == "ollama" else f"{root}/v1/models")
    models = _model_ids(listing, provider)
    return None if models is None else DetectedServer(provider, f"{root}/v1", models)


def root_of(base_url: str) -> str:
    """Where a server is probed: its base URL without a trailing /v1."""
    root = base_url.rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


def servers_to_probe(configured: Iterable[tuple[str, str]] = (),
                     named: Iterable[UrlServer] = ()) -> tuple[tuple[str, str], ...]:
    """The usual ports, then each (name, base_url) of a provider on this machine that they do not
    cover (config.toml's own local servers): what the app, `-p` and `doctor` all ask. A server
    named by its URL (`named`, asked by `ask_url_servers`) is not asked again on its port."""
    taken = {root_of(s.base_url) for s in named}
    out = [(name, root) for name, root in LOCAL_SERVERS if root not in taken]
    roots = {root for _, root in out} | taken
    for name, base_url in configured:
        root = root_of(base_url)
        if is_local_url(base_url) and root not in roots:
            out.append((name, root))
            roots.add(root)
    return tuple(out)


async def detect_local_servers(
    servers: tuple[tuple[str, str], ...] = LOCAL_SERVERS, timeout: float = DETECT_TIMEOUT  # noqa: ASYNC109  a budget: what answered within it is the answer, which a cancel would lose
) -> list[DetectedServer]:
    """Servers that answered their model list within `timeout` seconds in all, in the order
    given. A server that does not answer, or not in time, is left out; an address no connection
    can even be tried to (a port out of range) raises its error."""
    if not servers:
        return []
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout), trust_env=False, verify=ssl_context(),
                                 headers={"Accept-Encoding": ACCEPT}) as client:
        tasks = [asyncio.ensure_future(_probe(client, p, root)) for p, root in servers]
        try:
            await asyncio.wait(tasks, timeout=timeout)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    done = [t for t in tasks if t.done() and not t.cancelled()]
    for task in done:
        if (error := task.exception()) is not None:
            raise error
    return [s for t in done if (s := t.result()) is not None]


async def _ask_url_server(server: UrlServer, timeout: float, transport: httpx.AsyncBaseTransport | None  # noqa: ASYNC109  a budget: its answer or why not
                          ) -> DetectedServer | Unanswered:
    """`server`'s model list (`GET {base_url}/models`, as OpenAI's own clients ask), within
    `timeout` seconds in all. A remote server goes through the environment's proxy, as its
    requests do; its key goes with it, to it alone."""
    headers = {"Accept-Encoding": ACCEPT, **({"Authorization": f"Bearer {server.api_key}"} if server.api_key else {})}
    try:
        route = route_for(server.base_url, local=server.local)
        async with asyncio.timeout(timeout):
            async with client_for(route, timeout=httpx.Timeout(timeout), transport=transport) as client:
                listing, why, status = await _fetch_json(client, "GET", f"{server.base_url.rstrip('/')}/models",
                                                         headers=headers)
    except TimeoutError:
        return Unanswered(server, f"it did not answer within {timeout:g} s")
    except (httpx.HTTPError, OSError, ValueError, ImportError) as err:  # a proxy it cannot use, a URL httpx refuses
        return Unanswered(server, f"it cannot be reached ({type(err).__name__})")
    models = _model_ids(listing)
    if models is None:
        return Unanswered(server, why or "its answer is not a model list", status)
    return DetectedServer(server.provider, server.base_url, models, by_url=True)


async def ask_url_servers(servers: Iterable[UrlServer], *, local_timeout: float = DETECT_TIMEOUT,
                          remote_timeout: float = URL_SERVER_TIMEOUT,
                          transport: httpx.AsyncBaseTransport | None = None) -> list[DetectedServer | Unanswered]:
    """Each server named by its URL, asked at once for its models: a server on this machine or
    the local network within `local_timeout` seconds, another within `remote_timeout`; every
    answer bounded to MAX_ANSWER_BYTES. In the order given; never raises."""
    servers = tuple(servers)
    return list(await asyncio.gather(*(
        _ask_url_server(s, local_timeout if s.local else remote_timeout, transport) for s in servers)))


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


def _positive(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and value > 0:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip()) or None
    return None


def _same_model(name: object, model_id: str) -> bool:
    if not isinstance(name, str):
        return False
    # Ollama names "qwen3" and "qwen3:latest" the same model
    return name == model_id or name.removesuffix(":latest") == model_id.removesuffix(":latest")


async def _ollama(client: httpx.AsyncClient, root: str, model_id: str) -> ServerModelInfo | None:
    show = await _read_json(client, "POST", f"{root}/api/show", {"model": model_id})
    if not isinstance(show, dict):
        return None
    caps = show.get("capabilities")
    images = ("vision" in caps) if isinstance(caps, list) else None
    ps = await _read_json(client, "GET", f"{root}/api/ps")
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
    props = await _read_json(client, "GET", f"{root}/props")
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
    listing = await _read_json(client, "GET", f"{root}/api/v1/models")
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
    listing = await _read_json(client, "GET", f"{root}/api/v0/models")
    for model in (listing.get("data") or []) if isinstance(listing, dict) else []:
        if isinstance(model, dict) and _same_model(model.get("id"), model_id):
            kind = model.get("type")
            images = (kind == "vlm") if isinstance(kind, str) else None
            window = _positive(model.get("loaded_context_length")) or _positive(model.get("max_context_length"))
            if window:
                return ServerModelInfo(window, images, "LM Studio /api/v0/models")
    return None


async def _vllm(client: httpx.AsyncClient, root: str, model_id: str) -> ServerModelInfo | None:
    listing = await _read_json(client, "GET", f"{root}/v1/models")
    for model in (listing.get("data") or []) if isinstance(listing, dict) else []:
        if isinstance(model, dict) and _same_model(model.get("id"), model_id):
            window = _positive(model.get("max_model_len"))
            if window:
                return ServerModelInfo(window, None, "vLLM max_model_len")
    return None


_PROBES = {"ollama": _ollama, "llamacpp": _llamacpp, "lmstudio": _lmstudio, "vllm": _vllm}
LOCAL_SERVER_KINDS = tuple(_PROBES)  # provider names that are local servers of a known kind


async def detect_model_info(base_url: str, model_id: str, *, server: str | None = None,
                            timeout: float = PROBE_TIMEOUT, transport: httpx.AsyncBaseTransport | None = None  # noqa: ASYNC109  a budget: what answered within it is the answer, which a cancel would lose
                            ) -> ServerModelInfo | None:
    """Ask the server behind `base_url` what it runs `model_id` with, within `timeout` seconds in
    all. `server` ("ollama", "llamacpp", "lmstudio", "vllm") picks the probe; otherwise each is
    tried in turn (llama.cpp, Ollama, LM Studio, vLLM). None when the server says nothing usable
    in time. Never raises."""
    order = [server] if server in _PROBES else ["llamacpp", "ollama", "lmstudio", "vllm"]
    root = root_of(base_url)
    try:
        async with asyncio.timeout(timeout):
            async with httpx.AsyncClient(timeout=httpx.Timeout(min(timeout, 1.0)), trust_env=False,
                                         transport=transport, verify=ssl_context(),
                                         headers={"Accept-Encoding": ACCEPT}) as client:
                for name in order:
                    assert name is not None
                    found = await _PROBES[name](client, root, model_id)
                    if found is not None and found.context_window:
                        return found
    except (TimeoutError, httpx.HTTPError, OSError):
        return None
    return None


def refine(model: ModelInfo, found: ServerModelInfo | None) -> ModelInfo:
    """`model` with what its server said: the window (a smaller one declared in config.toml is
    kept: the person chose it), image input when the server says, and a reply limit sized to the
    window. Unchanged when the server said nothing."""
    if found is None or not found.context_window:
        return model
    declared = model.context_window if model.window_known else None
    window = min(found.context_window, declared) if declared else found.context_window
    inputs = tuple(model.input)
    if found.images is True and "image" not in inputs:
        inputs = (*inputs, "image")
    elif found.images is False and "image" in inputs:
        inputs = tuple(k for k in inputs if k != "image")
    return dataclasses.replace(model, context_window=window, input=inputs, window_known=True, send_max_tokens=True,
                               max_tokens=min(model.max_tokens, max(window // 4, 256)))


async def with_server_facts(model: ModelInfo, *, timeout: float = PROBE_TIMEOUT,  # noqa: ASYNC109  a budget: what answered within it is the answer, which a cancel would lose
                            transport: httpx.AsyncBaseTransport | None = None) -> tuple[ModelInfo, ServerModelInfo | None]:
    """`model` refined by what the local server it runs on says (`refine`); unchanged for a cloud
    API or a server that says nothing in time."""
    if not is_local_url(model.base_url):
        return model, None
    found = await detect_model_info(model.base_url, model.id, server=model.provider if model.provider in _PROBES else None,
                                    timeout=timeout, transport=transport)
    if found is None or not found.context_window:
        return model, None
    return refine(model, found), found
