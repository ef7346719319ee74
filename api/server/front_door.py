"""The front door: which requests the server answers at all, checked before any route runs, the
same way for the API and the dashboard.

- **Host.**  With auth off, and on ``/ui`` always, a request is answered only when its ``Host`` is
  a loopback name or address (``localhost``, ``*.localhost``, 127.0.0.0/8, ``[::1]``, any port) or
  a name of ``[server] allowed_hosts``; else 400.  A web page that rebinds its own DNS name to
  127.0.0.1 still sends its own name, so it is refused.  ``/health`` and ``/ready`` answer any Host:
  an orchestrator's probe names the pod's address.
- **Cross-site writes.**  Where the Host is checked (with auth off, and on ``/ui`` always: where a
  browser's request carries its rights with it, by being sent from this machine or with a cookie),
  a write (POST, PUT, PATCH, DELETE, and the fetch ``GET /queue/{q}/job``,
  which starts jobs) that a browser marks as coming from elsewhere — ``Sec-Fetch-Site:
  cross-site`` or ``same-site``, or an ``Origin`` that is not this server's own — is refused with
  403.  An origin is this server's own when its host is one the server answers to (the Host rule
  above) and it names the host and port the request was sent to.  A request with neither header
  (curl, the client, every non-browser) passes.
- **Every answer** carries ``X-Content-Type-Options: nosniff``, and over TLS
  ``Strict-Transport-Security``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jobledger.server.errors import error_response

#: Routes that answer whatever the Host: the probes of load balancers and orchestrators.
ANY_HOST = frozenset({"/health", "/ready"})
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: ``GET /queue/{queue}/job`` fetches, and so starts, a job.
_FETCH = re.compile(r"^/queue/[^/]+/job$")
#: Sec-Fetch-Site values a browser gives a request of this very origin, or one the user typed.
OWN_SITE = frozenset({"same-origin", "none"})
HSTS = "max-age=31536000"
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def split_host(netloc: str) -> tuple[str, int | None] | None:
    """``host[:port]`` (``[v6]:port`` too) as a lower-case name and its port; None if malformed."""
    try:
        parts = urlsplit("//" + netloc.strip())
        name, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not name or parts.username is not None or parts.path or parts.query or parts.fragment:
        return None
    return name.lower().rstrip("."), port


def loopback(name: str) -> bool:
    """Whether a host name stands for this machine: ``localhost``, ``*.localhost``, a loopback IP."""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Hosts:
    """The names the server answers to: loopback ones, and ``allowed`` (exact names, or
    ``*.example.com`` for every name under example.com), whatever the port."""

    def __init__(self, allowed: Sequence[str]) -> None:
        names = [a.strip().lower().rstrip(".") for a in allowed if a.strip()]
        self.exact = frozenset(n for n in names if not n.startswith("*."))
        self.suffixes = tuple(n[1:] for n in names if n.startswith("*."))

    def allows(self, name: str) -> bool:
        return loopback(name) or name in self.exact or name.endswith(self.suffixes or ("\0",))


def is_write(method: str, path: str) -> bool:
    """Whether a request changes the ledger (a fetch starts a job)."""
    return method in WRITES or (method in ("GET", "HEAD") and _FETCH.match(path) is not None)


def _own_port(name_port: tuple[str, int | None], scheme: str) -> tuple[str, int | None]:
    """A host and port with the scheme's default port written as none, so the two forms compare."""
    name, port = name_port
    return name, None if port == _DEFAULT_PORTS.get(scheme) else port


_WANTED = frozenset({b"host", b"origin", b"sec-fetch-site"})


def _wanted(scope: Scope) -> dict[bytes, str]:
    """The request's headers this module reads (the first of each), in one pass over them."""
    found: dict[bytes, str] = {}
    for name, value in scope["headers"]:
        if name in _WANTED and name not in found:
            found[name] = value.decode("latin-1")
    return found


class FrontDoor:
    """ASGI middleware applying the rules of the module.  ``auth``: the API checks tokens, so its
    Host is not checked (the dashboard's still is, its sessions being cookies)."""

    #: How many Host values' answers are remembered (a client may send any number of them).
    REMEMBERED = 1024

    def __init__(self, app: ASGIApp, *, auth: bool, allowed_hosts: Sequence[str] = ()) -> None:
        self.app, self.auth, self.hosts = app, auth, Hosts(allowed_hosts)
        self._known: dict[str, bool] = {}  # Host header -> whether a name the server answers to

    def host_allowed(self, raw: str) -> bool:
        """Whether a Host header names a host the server answers to, remembered per value."""
        known = self._known.get(raw)
        if known is None:
            host = split_host(raw)
            known = host is not None and self.hosts.allows(host[0])
            if len(self._known) >= self.REMEMBERED:
                self._known.clear()
            self._known[raw] = known
        return known

    def host_checked(self, path: str) -> bool:
        if path in ANY_HOST:
            return False
        return not self.auth or path == "/ui" or path.startswith("/ui/")

    def browser_guarded(self, path: str, method: str) -> bool:
        """Whether a request is a write whose rights a browser would send for any page: with auth
        off, any; with auth on, the dashboard's (its session is a cookie; a bearer token is never
        sent by a browser on its own)."""
        return self.host_checked(path) and is_write(method, path)

    def answers(self, name: str, path: str) -> bool:
        """Whether a request for host ``name`` on ``path`` is answered at all."""
        return not self.host_checked(path) or self.hosts.allows(name)

    def host_refusal(self, scope: Scope, headers: dict[bytes, str]) -> str | None:
        if not self.host_checked(scope["path"]):
            return None
        raw = headers.get(b"host", "")
        if not self.host_allowed(raw):
            return (f"this server does not answer to the host {raw[:100]!r}: it answers to loopback names "
                    "and to [server] allowed_hosts")  # fmt: skip
        return None

    def cross_site(self, scope: Scope, headers: dict[bytes, str]) -> bool:
        """Whether a browser says the request comes from a page that is not this server's."""
        fetch_site = headers.get(b"sec-fetch-site")
        if fetch_site is not None and fetch_site.lower() not in OWN_SITE:
            return True
        origin = headers.get(b"origin")
        return origin is not None and not self.own_origin(origin, scope, headers)

    def own_origin(self, origin: str, scope: Scope, headers: dict[bytes, str]) -> bool:
        parts = urlsplit(origin.strip())
        if parts.scheme not in ("http", "https") or parts.path or parts.query:
            return False
        sent, to = split_host(parts.netloc), split_host(headers.get(b"host", ""))
        if sent is None or to is None or not self.answers(sent[0], scope["path"]):
            return False
        return _own_port(sent, parts.scheme) == _own_port(to, scope.get("scheme", "http"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _wanted(scope)
        extra = [(b"x-content-type-options", b"nosniff")]
        if scope.get("scheme") == "https":
            extra.append((b"strict-transport-security", HSTS.encode()))

        async def send_marked(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                added = [(name, value) for name, value in extra if name not in present]
                message = {**message, "headers": [*message.get("headers", []), *added]}
            await send(message)

        refusal = self.host_refusal(scope, headers)
        if refusal is not None:
            await error_response(400, refusal)(scope, receive, send_marked)
        elif self.browser_guarded(scope["path"], scope["method"]) and self.cross_site(scope, headers):
            message = "refused: this request was sent by a page of another site"
            await error_response(403, message)(scope, receive, send_marked)
        else:
            await self.app(scope, receive, send_marked)
