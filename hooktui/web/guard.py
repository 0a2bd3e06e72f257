"""The check in front of `hooktui serve`: who may drive the app.

Every websocket that textual-serve accepts starts a hooktui process, and hooktui's console
(`:`) evaluates Python with full builtins. Whoever drives the page therefore runs code as
the user who started `serve`: a web page in that user's browser (a websocket to
127.0.0.1 is not stopped by the same-origin policy), a page that DNS-rebinds its own name to
127.0.0.1, or any other user of a shared machine (127.0.0.1 is theirs too). So a request
gets through only with all three of:

- **a Host this server answers to**: the bound address, `localhost`, a loopback address, an
  IP address at all when bound to 0.0.0.0 / ::, or `--public-url`'s host. A rebound page
  still sends `Host: attacker.example`; IP literals cannot be rebound.
- **the page's own Origin**, where an Origin is sent, and always on a websocket (browsers
  always send one there): `SCHEME://HOST` of this very request, or `--public-url`'s origin.
  Another site's page, or a page on another port of 127.0.0.1, cannot open the websocket,
  even when the browser would carry the cookie.
- **the token** `serve` made at start (secrets.token_urlsafe(32): 256 bits), compared in
  constant time (hmac.compare_digest), from one of: `?token=` (the printed URL), this
  server's cookie, which the page's response sets (HttpOnly, so no script reads it;
  SameSite=Strict, so no other site's request carries it) and which the page's scripts,
  fonts, websocket and downloads then send, or `Authorization: token ...` (scripts).

Anything else is a 403 before any handler runs, so no process starts. The answer never
contains the token, and nothing here logs it (the access log, which prints query strings,
is off: server.py).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field

from aiohttp import web
from yarl import URL

# The names Host may carry besides the bound address and --public-url's host.
LOCAL_NAMES = ("localhost",)
WILDCARDS = ("0.0.0.0", "::", "")
# Sent with every answer that is not a websocket or a stream already started.
HEADERS = {
    "Referrer-Policy": "no-referrer",  # the page's URL (with ?token=) goes to no other site
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def new_token() -> str:
    return secrets.token_urlsafe(32)


def hostname(host_header: str) -> str:
    """The name or address in a Host header, lowercase, without the port or brackets."""
    host = host_header.strip().lower()
    if host.startswith("["):  # [::1]:8000
        end = host.find("]")
        return host[1:end] if end > 0 else ""
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


@dataclass(frozen=True)
class Guard:
    token: str = field(repr=False)  # never in a repr, a log line or a test failure
    hosts: frozenset[str]  # names accepted in Host (lowercase, no port)
    any_address: bool  # bound to a wildcard: every IP address is this machine's
    origins: frozenset[str]  # accepted besides the request's own: --public-url's
    cookie: str  # this server's cookie name: another server on the same host has its own
    secure_cookie: bool = False  # --public-url is https

    @classmethod
    def make(cls, host: str, public_url: str | None = None, token: str | None = None) -> Guard:
        bound = hostname(f"[{host}]" if ":" in host else host)
        hosts = {bound, *LOCAL_NAMES} - {""}
        origins: set[str] = set()
        if public_url:
            url = URL(public_url)
            if url.host:
                hosts.add(hostname(f"[{url.host}]" if ":" in url.host else url.host))
                origins.add(str(url.origin()).lower())
        return cls(
            token=token or new_token(),
            hosts=frozenset(hosts),
            any_address=bound in WILDCARDS,
            origins=frozenset(origins),
            cookie=f"hooktui-{secrets.token_hex(4)}",
            secure_cookie=bool(public_url) and public_url.lower().startswith("https:"),
        )

    # -- the three checks ----------------------------------------------------------------
    def host_ok(self, host_header: str) -> bool:
        name = hostname(host_header)
        if name in self.hosts:
            return True
        try:
            address = ipaddress.ip_address(name)
        except ValueError:
            return False  # a name we do not know: DNS rebinding looks like this
        return address.is_loopback or self.any_address

    def origin_ok(self, origin: str | None, host_header: str, scheme: str) -> bool:
        if origin is None:
            return False
        origin = origin.strip().lower().rstrip("/")
        return origin == f"{scheme}://{host_header.strip().lower()}" or origin in self.origins

    def token_ok(self, candidates: list[str]) -> bool:
        expected = self.token.encode()
        # Every candidate is compared, in constant time each: no early exit on a match.
        matches = [hmac.compare_digest(candidate.encode("utf-8", "replace"), expected) for candidate in candidates]
        return any(matches)

    def presented(self, request: web.BaseRequest) -> list[str]:
        """The tokens a request carries: its query's, its cookie's, its Authorization's."""
        found = [request.query.get("token"), request.cookies.get(self.cookie)]
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() in ("token", "bearer"):
            found.append(value.strip())
        return [token for token in found if token]

    # -- in front of textual-serve ---------------------------------------------------------
    def refusal(self, request: web.BaseRequest) -> str | None:
        """Why this request is refused, or None when it may go through."""
        if not self.host_ok(request.host):
            names = ", ".join(sorted(self.hosts - set(WILDCARDS)))
            addresses = "any IP address" if self.any_address else "loopback addresses"
            return (
                f"Host {request.host!r} is not an address of this server: it answers to {names} and {addresses} "
                "(open the page at one of those, or start serve with --public-url set to the one you use)"
            )
        origin = request.headers.get("Origin")
        if (origin is not None or is_websocket(request)) and not self.origin_ok(origin, request.host, request.scheme):
            return f"a request from another page (Origin {origin!r}) may not drive this server"
        if not self.token_ok(self.presented(request)):
            return "this server needs its token: open the URL that `hooktui serve` printed (…/?token=…)"
        return None

    def middleware(self):
        @web.middleware
        async def guard(request: web.Request, handler) -> web.StreamResponse:
            reason = self.refusal(request)
            if reason is not None:
                return web.Response(status=403, text=f"403 Forbidden: {reason}\n", headers=HEADERS)
            response = await handler(request)
            if not response.prepared:  # a websocket or a download has sent its headers already
                response.headers.update(HEADERS)
                if request.query.get("token") and not is_websocket(request):
                    # The page's scripts, fonts, websocket and downloads carry this, not ?token=.
                    response.set_cookie(
                        self.cookie, self.token, path="/", httponly=True, samesite="Strict", secure=self.secure_cookie
                    )
            return response

        return guard


def is_websocket(request: web.BaseRequest) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"
