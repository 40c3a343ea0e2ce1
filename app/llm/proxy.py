"""Which provider requests go through the environment's proxy, and naming that proxy in errors.

The environment's proxies (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY, in either case) apply
to remote providers, as users expect from every other tool. They never apply to a server on this
machine or to a provider marked local: a corporate proxy cannot reach 127.0.0.1 of *this* host, and
sending it the request would hand it the API key (issue 15). We choose the proxy ourselves with the
standard library's reading of those variables and give httpx an explicit `proxy` with
`trust_env=False`, so what we report is exactly what was used.
"""

from __future__ import annotations

import ipaddress
import ssl
import urllib.request
from dataclasses import dataclass
from functools import lru_cache

import httpx

from .content_encoding import ACCEPT

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


def is_local_host(host: str) -> bool:
    """Loopback (127.0.0.0/8, ::1), link-local, the unspecified address, `localhost` and `*.localhost`."""
    name = host.strip("[]").rstrip(".").lower()
    if name in _LOCAL_NAMES or name.endswith(".localhost"):
        return True
    try:
        addr = ipaddress.ip_address(name.split("%", 1)[0])  # fe80::1%eth0
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback or addr.is_link_local or addr.is_unspecified


@dataclass(frozen=True)
class Route:
    """How one request travels: `proxy` is None for a direct connection."""

    proxy: str | None = None
    source: str = ""  # the variable it came from, e.g. "HTTPS_PROXY"

    @property
    def password(self) -> str | None:
        """The proxy's password, if its URL has one (a secret to keep out of messages)."""
        try:
            return httpx.URL(self.proxy).password if self.proxy else None
        except (httpx.InvalidURL, TypeError):
            return None

    @property
    def shown(self) -> str:
        """The proxy URL without credentials, for messages."""
        return shown_url(self.proxy or "")


def shown_url(url: str) -> str:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return url
    if parsed.userinfo:
        parsed = parsed.copy_with(username=None, password=None)
    return str(parsed).rstrip("/")


def route_for(url: str, *, local: bool = False) -> Route:
    """The proxy the environment names for `url`, unless the target is local or NO_PROXY excludes it."""
    target = httpx.URL(url)
    host = target.host
    if local or not host or is_local_host(host):
        return Route()
    proxies = urllib.request.getproxies_environment()
    scheme = target.scheme
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy:
        return Route()
    if proxies.get("no"):
        netloc = f"{host}:{target.port}" if target.port else host
        if urllib.request.proxy_bypass_environment(netloc, proxies):  # type: ignore[attr-defined]  # (in urllib.request, not in typeshed)
            return Route()
    if "://" not in proxy:
        proxy = "http://" + proxy  # the common `HTTP_PROXY=host:3128` form
    source = f"{scheme.upper()}_PROXY" if proxies.get(scheme) else "ALL_PROXY"
    return Route(proxy, source)


@lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    # trust_env=False also stops httpx reading SSL_CERT_FILE / SSL_CERT_DIR; keep honouring them
    return httpx.create_ssl_context(trust_env=True)


def ssl_context() -> ssl.SSLContext:
    """The one certificate context every client shares: loading it takes a tenth of a second, so
    it is built once (a background probe builds it off the event loop, before the first request)."""
    return _ssl_context()


def client_for(route: Route, *, timeout: httpx.Timeout, transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
    """An httpx client that goes exactly the way `route` says (raises ImportError for SOCKS without socksio)."""
    return httpx.AsyncClient(timeout=timeout, transport=transport, proxy=route.proxy, trust_env=False,
                             verify=_ssl_context(), headers={"Accept-Encoding": ACCEPT})
