"""textual-serve's Server, with what `hooktui serve` needs around it.

- The guard (guard.py) is the app's first middleware: nothing reaches textual-serve's
  handlers (the page, the websocket that starts a process, static files, downloads) without
  the right Host, Origin and token.
- At most `max_sessions` app processes at once. Each one is a full hooktui (a model, torch,
  ~200 MB); without a cap, ten websockets made ten. One more websocket waits a moment for a
  slot (a reloaded tab closes its old websocket about when the new one opens), then gets a
  message on its terminal saying why, and no process.
- The page's websocket and static URLs use the address the browser used (its Host, already
  checked), unless --public-url says otherwise: the page works at localhost as at 127.0.0.1,
  and through a tunnel to another local port, and the cookie goes with it.
- The token is never logged: aiohttp's access log (which prints query strings) is off,
  tracebacks do not show local variables, and every log record goes through TokenFilter
  (log_filter.py: a malformed request, whose error quoted the raw request line, is one
  line without it). The URL with the token is printed once, by `on_listening`, after the
  port is bound.
- The app processes end with the server, even a SIGKILLed one: each reads the server's
  pipe as its stdin, and an app whose stdin ends (the server is gone) hangs itself up
  (hooktui/ui/served_driver.py).
- SIGINT and SIGTERM end the sessions (each app is told to quit) and the server.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable
from typing import Any

import aiohttp_jinja2
from aiohttp import WSMsgType, web
from rich.logging import RichHandler
from textual_serve.server import Server, to_int

from .guard import Guard
from .log_filter import TokenFilter

# How long a websocket past the cap waits for a slot before it is refused.
SLOT_WAIT_S = 2.0
# How long the app processes get to quit when the server stops, before aiohttp cancels.
SHUTDOWN_S = 5.0


def full_message(max_sessions: int) -> bytes:
    sessions = "1 session is" if max_sessions == 1 else f"{max_sessions} sessions are"
    return (
        f"\r\n  hooktui serve: {sessions} open already, the most this server runs at once "
        f"(--max-sessions {max_sessions}).\r\n"
        "  Close another hooktui tab (or quit it with q), then reload this page.\r\n"
    ).encode()


class GuardedServer(Server):
    def __init__(
        self,
        command: str,
        *,
        guard: Guard,
        max_sessions: int,
        on_listening: Callable[[], None],
        host: str,
        port: int,
        title: str,
        public_url: str | None = None,
    ) -> None:
        super().__init__(command, host=host, port=port, title=title, public_url=public_url.rstrip("/") if public_url else None)
        self.guard = guard
        self.max_sessions = max_sessions
        self.on_listening = on_listening
        self.fixed_public_url = public_url is not None
        self.sessions = 0  # app processes running (or starting, or stopping)
        self._handlers: set[asyncio.Task] = set()  # every websocket's, ended at shutdown

    # -- the app ---------------------------------------------------------------------------
    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.insert(0, self.guard.middleware())
        return app

    def initialize_logging(self) -> None:
        # textual-serve's, without local variables in tracebacks (a frame can hold a token),
        # and every record through TokenFilter (log_filter.py): no token, no control character.
        handler = RichHandler(show_path=False, show_time=False, console=self.console)
        handler.addFilter(TokenFilter(self.guard.token))
        logging.basicConfig(level="DEBUG" if self.debug else "INFO", format="%(message)s", handlers=[handler])

    async def on_startup(self, app: web.Application) -> None:
        pass  # textual-serve prints its logo and URL here; hooktui prints its own, once bound

    async def on_shutdown(self, app: web.Application) -> None:
        handlers = [task for task in self._handlers if not task.done()]
        for task in handlers:
            task.cancel()  # textual-serve's handler then tells its app to quit, and waits
        await asyncio.gather(*handlers, return_exceptions=True)

    # -- the page --------------------------------------------------------------------------
    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        """textual-serve's page, with its URLs on the address the browser used."""
        base = self.public_url if self.fixed_public_url else f"{request.scheme}://{request.host}"
        router = request.app.router
        websocket = f"{base}{router['websocket'].url_for()}"
        websocket = ("wss:" if websocket.startswith("https:") else "ws:") + websocket.split(":", 1)[1]
        return {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": websocket,
            "config": {"static": {"url": f"{base}{router['static'].url_for(filename='/')}".rstrip("/") + "/"}},
            "application": {"name": self.title},
        }

    # -- sessions --------------------------------------------------------------------------
    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            if not await self._take_slot():
                return await self._refuse(request)
            try:
                return await super().handle_websocket(request)
            finally:
                self.sessions -= 1
        finally:
            self._handlers.discard(task)

    async def _take_slot(self) -> bool:
        deadline = time.monotonic() + SLOT_WAIT_S
        while self.sessions >= self.max_sessions:
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.05)
        self.sessions += 1  # no await between the check and this: one event loop
        return True

    async def _refuse(self, request: web.Request) -> web.WebSocketResponse:
        """The websocket opens, its terminal says why there is no app, and it stays open (the
        page would cover the text with "Session ended" if it closed) with no process."""
        logging.getLogger("textual-serve").warning(
            "a session was refused: %d running already (--max-sessions %d)", self.sessions, self.max_sessions
        )
        websocket = web.WebSocketResponse(heartbeat=15)
        await websocket.prepare(request)
        await websocket.send_bytes(full_message(self.max_sessions))
        async for message in websocket:
            if message.type == WSMsgType.ERROR:
                break
        return websocket

    # -- serving ---------------------------------------------------------------------------
    def serve(self, debug: bool = False) -> None:
        """Until SIGINT or SIGTERM. OSError when the address cannot be bound."""
        self.debug = debug
        self.initialize_logging()
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, stop.set)
        runner = web.AppRunner(await self._make_app(), access_log=None, handle_signals=False, shutdown_timeout=SHUTDOWN_S)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self.port).start()
            self.on_listening()
            await stop.wait()
        finally:
            await runner.cleanup()
