"""The database URL: where it comes from, how it is shown, and what is added before connecting.

Needs no driver (the doctor and error messages use it without psycopg). A URL is either a URI
(`postgresql://user:password@host:5432/db?sslmode=verify-full`) or libpq's `key=value` string;
libpq reads every parameter of both (TLS: sslmode, sslrootcert, sslcert, sslkey, sslcrl, …;
passfile and PGPASSWORD), so TLS settings in the URL are honoured as psql honours them.

The password is never shown: `redact` puts `***` in its place wherever it stands (the user
part of a URI, `password=` in its query or in a key=value string), and `scrub` takes it out of
any text a driver or server sends back before that text reaches an error line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, quote, unquote, urlsplit

ENV = "TREECHAT_DATABASE_URL"
MASK = "***"
SCHEMES = ("postgresql", "postgres")

# Added when the URL does not say otherwise: every wait for the server is bounded. libpq's
# connect_timeout bounds each connection attempt; the keepalives and tcp_user_timeout notice a
# server that vanished from the network within about 30 s instead of the system's two hours.
DEFAULTS: dict[str, str] = {
    "connect_timeout": "5",
    "application_name": "treechat",
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
    "tcp_user_timeout": "30000",
}

_KV = re.compile(r"""(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)""")


class DatabaseUrlError(ValueError):
    """A URL that cannot name a PostgreSQL server; the message never repeats the URL itself."""


def database_url(configured: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """`TREECHAT_DATABASE_URL`, else `database_url` from config.toml, else None."""
    env = os.environ if env is None else env
    return (env.get(ENV) or "").strip() or (configured or "").strip() or None


def is_uri(url: str) -> bool:
    return url.split("://", 1)[0].lower() in SCHEMES and "://" in url


def problem(url: str) -> str | None:
    """Why `url` cannot name a PostgreSQL server, as words that follow its name (None: it can).
    The URL itself is never repeated: it may hold a password."""
    if not url.strip():
        return "is empty"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in url):
        return "contains a control character"
    if "://" in url:
        scheme = url.split("://", 1)[0]
        if scheme.lower() not in SCHEMES:
            return f"must start with postgresql:// (not {scheme[:20]}://)"
        try:
            _ = urlsplit(url).port
        except ValueError as err:
            return f"has a port that is not valid ({err})"
        return None
    if "=" not in url:
        return "must be postgresql://[USER@]HOST[:PORT]/DATABASE (or libpq's key=value pairs)"
    return None


def check(url: str) -> None:
    """Raise DatabaseUrlError for what cannot be a PostgreSQL URL."""
    found = problem(url)
    if found:
        raise DatabaseUrlError(f"the database URL {found}")


def redact(url: str) -> str:
    """The URL as safe to show: the password (if any) replaced by ***, everything else kept."""
    if is_uri(url):
        try:
            parts = urlsplit(url)
        except ValueError:
            return "(unreadable database URL)"
        netloc = parts.netloc
        if "@" in netloc:
            user, _, host = netloc.rpartition("@")
            if ":" in user:
                user = user.split(":", 1)[0] + ":" + MASK
            netloc = f"{user}@{host}"
        query = "&".join(
            f"{k}={MASK if k == 'password' else quote(v, safe='/:,')}" for k, v in parse_qsl(parts.query, True)
        )
        return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")
    return _KV.sub(lambda m: f"{m.group(1)}={MASK}" if m.group(1) == "password" else m.group(0), url)


def password_of(url: str) -> str | None:
    """The password the URL itself carries (for `scrub`), or None."""
    if is_uri(url):
        try:
            parts = urlsplit(url)
        except ValueError:
            return None
        found = parts.password
        for k, v in parse_qsl(parts.query, True):
            if k == "password":
                found = v
        return unquote(found) if found else None
    for key, value in _KV.findall(url):
        if key == "password":
            return value.strip("'").replace("\\'", "'") or None
    return None


def scrub(text: str, *secrets: str | None) -> str:
    """`text` with every secret (and its URL-quoted form) replaced by ***."""
    for secret in secrets:
        if secret:
            for form in {secret, quote(secret, safe="")}:
                text = text.replace(form, MASK)
    return text


def where(params: Mapping[str, str]) -> str:
    """host:port/dbname as a person reads it, from libpq's parameters (no user, no password)."""
    host = params.get("host") or params.get("hostaddr") or os.environ.get("PGHOST") or "localhost"
    port = params.get("port") or os.environ.get("PGPORT") or "5432"
    db = params.get("dbname") or os.environ.get("PGDATABASE") or params.get("user") or ""
    if host.startswith("/"):
        return f"{host}/.s.PGSQL.{port}" + (f" (database {db})" if db else "")
    return f"{host}:{port}/{db}" if db else f"{host}:{port}"
