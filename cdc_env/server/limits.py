"""Limits that keep one client from starving the others, checked before anything parses or ships work.

- the bearer token (constant time) and the body-size cap, as ASGI middleware (``GuardMiddleware``);
- the nesting depth of request bodies and JSON-text tool arguments (``json_depth``);
- tool arguments checked against the tool's JSON Schema before an environment goes to a worker
  (``check_arguments``);
- per-connection deadlines for a request's head and body and a cap on open connections
  (``guarded_protocol``, a uvicorn h11 protocol); an upgraded WebSocket leaves them behind and
  is bounded per message instead (``server_openenv``, ``ws_limits``).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from typing import Any

from .. import tools
from ..env import _parse_args
from .errors import ApiError, error_response

MAX_JSON_DEPTH = 32  # nesting of a request body (and of JSON-text tool arguments)
# Liveness without a token (a load balancer's or an orchestrator's probe): constant answers that
# say nothing about the server's state. /v1/health (load, episodes) still needs the token.
OPEN_PATHS = frozenset({"/v1/live", "/openenv/health"})


def _json_media_type(content_type: bytes) -> bool:
    """``application/json`` or a ``+json`` type (parameters such as charset aside)."""
    media = content_type.decode("latin-1").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _token_digest(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


class GuardMiddleware:
    """Bearer token (constant-time, before anything else) and the request-size cap (413).

    The body is read here, up to the cap, and replayed to the app: a body over the cap is refused
    whether or not it declares its length, and nothing past the cap is buffered.
    """

    def __init__(self, app: Any, token: str | None, max_body: int) -> None:
        self.app = app
        self.max_body = max_body
        self.want = None if token is None else _token_digest(f"Bearer {token}".encode())

    @staticmethod
    async def _send_error(send: Any, status: int, code: str, message: str,
                          headers: dict[str, str] | None = None) -> None:
        await error_response(status, code, message, headers)({"type": "http"}, _no_receive, send)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        if scope.get("method") == "GET" and scope.get("path") in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self.want is not None:
            got = _token_digest(headers.get("authorization", b""))
            if not hmac.compare_digest(got, self.want):
                await self._send_error(send, 401, "unauthorized",
                                       "this server requires 'Authorization: Bearer <token>'",
                                       {"WWW-Authenticate": "Bearer"})
                return
        declared = headers.get("content-length")
        if declared is not None:
            try:
                if int(declared) > self.max_body:
                    await self._send_error(send, 413, "body_too_large",
                                           f"the body is {int(declared)} bytes; the limit is {self.max_body}")
                    return
            except ValueError:
                await self._send_error(send, 400, "bad_request", "the Content-Length header is not a number")
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await self._send_error(send, 413, "body_too_large", f"the body exceeds {self.max_body} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        declared_type = headers.get("content-type")
        lenient = declared_type is None and scope.get("path", "").startswith("/openenv/")
        if body.strip() and not lenient and not _json_media_type(declared_type or b""):
            # e.g. curl -d without -H sends application/x-www-form-urlencoded; the /v1 models read
            # only JSON. The OpenEnv routes parse the body themselves: there no header reads as JSON.
            said = ("it has none" if declared_type is None
                    else f"it says {declared_type.decode('latin-1', 'replace')[:60]!r}")
            await self._send_error(
                send, 415, "unsupported_media_type",
                f"the body must be JSON sent with the header 'Content-Type: application/json' ({said}; "
                "with curl: -H 'Content-Type: application/json')")
            return
        if json_depth(body) > MAX_JSON_DEPTH:
            await self._send_error(send, 422, "bad_request",
                                   f"the body is nested more than {MAX_JSON_DEPTH} levels deep")
            return
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _no_receive() -> dict:
    return {"type": "http.disconnect"}


def json_depth(text: bytes | str) -> int:
    """The deepest nesting of [ and { in JSON text (outside strings), without parsing it."""
    data = text.encode("utf-8", "replace") if isinstance(text, str) else text
    depth = deepest = 0
    in_str = escaped = False
    for b in data:
        if in_str:
            if escaped:
                escaped = False
            elif b == 0x5C:  # backslash
                escaped = True
            elif b == 0x22:
                in_str = False
        elif b == 0x22:
            in_str = True
        elif b in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif b in (0x5D, 0x7D):
            depth -= 1
    return deepest


def _object_depth(value: object, limit: int) -> int:
    """Nesting depth of a parsed JSON value, counted iteratively; stops once past ``limit``."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d)
            if deepest > limit:
                return deepest
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def check_arguments(tool: object, arguments: object) -> tuple[object, bool]:
    """(arguments, whether they fit the tool's JSON Schema); 422 when nested too deep.

    JSON-text arguments are parsed here (after a depth check on the text), so only plain,
    bounded values are ever pickled to a worker.
    """
    too_deep = (json_depth(arguments) if isinstance(arguments, str | bytes)
                else _object_depth(arguments, MAX_JSON_DEPTH)) > MAX_JSON_DEPTH
    if too_deep:
        raise ApiError(422, "bad_request",
                       f"the arguments are nested more than {MAX_JSON_DEPTH} levels deep")
    if not isinstance(tool, str) or tool not in tools.TOOL_NAMES:
        return arguments, False
    parsed, problem = _parse_args(arguments)
    if problem is None:
        problem = tools.check_arguments(tool, parsed)
    return (parsed, True) if problem is None else (arguments, False)


WS_READ_CHUNK = 256 * 1024  # the most asyncio reads from a socket at once (bytes)


WS_LINGER = 10.0  # seconds a connection closed for an oversized message goes on discarding input


def ws_limits(max_body: int) -> dict[str, Any]:
    """uvicorn's WebSocket settings: a message is at most ``max_body`` bytes (larger: close 1009,
    delivered, see ``lingering_ws_protocol``), and no per-message compression, so what the server
    holds for one WebSocket before the app reads it is at most one socket read (``WS_READ_CHUNK``)
    of messages plus one partial message. With compression, one read of deflated messages could
    expand to hundreds of MiB."""
    return {"ws": lingering_ws_protocol(), "ws_max_size": max_body, "ws_per_message_deflate": False}


class FrameCursor:
    """Where a client's byte stream is among its WebSocket frames, keeping no payload: ``feed``
    returns the opcodes of the frames whose header ended in the bytes fed (RFC 6455 5.2 framing)."""

    def __init__(self) -> None:
        self._head = bytearray()
        self._skip = 0  # payload bytes of the current frame still to come

    def feed(self, data: bytes) -> list[int]:
        ops: list[int] = []
        i, n = 0, len(data)
        while i < n:
            if self._skip:
                k = min(self._skip, n - i)
                self._skip -= k
                i += k
                continue
            self._head.append(data[i])
            i += 1
            head = self._head
            if len(head) < 2:
                continue
            short = head[1] & 0x7F
            ext = 2 if short == 126 else 8 if short == 127 else 0
            if len(head) < 2 + ext + (4 if head[1] & 0x80 else 0):
                continue
            ops.append(head[0] & 0x0F)
            self._skip = int.from_bytes(head[2:2 + ext], "big") if ext else short
            head.clear()
        return ops


CLOSE_OPCODE = 0x8


def lingering_ws_protocol() -> type:
    """uvicorn's WebSocket protocol (websockets, sans-I/O) with a lingering close after a protocol error.

    When a frame goes over ``ws_max_size`` the protocol sends close 1009 and used to close the
    socket at once, while the client was still writing the rest of its message: a socket closed
    with unread input sends a TCP reset, and a client still writing (or one whose reset arrived
    before it read) never saw the close frame. Here the close frame is sent and the client's input
    is read and thrown away -- never parsed nor kept; a ``FrameCursor`` follows the frame
    boundaries -- until the client's own close frame (the closing handshake done) or its EOF, for
    ``WS_LINGER`` seconds at most; then the socket is closed.
    """
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    class LingeringWebSocketProtocol(WebSocketsSansIOProtocol):
        _lingering = False
        _cursor: FrameCursor | None = None

        def handle_parser_exception(self) -> None:
            assert self.conn.close_sent is not None
            close = self.conn.close_sent
            self.queue.put_nowait({"type": "websocket.disconnect", "code": close.code,
                                   "reason": close.reason})
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.close_sent = True
            self._lingering = True
            if self.read_paused:
                self.read_paused = False
                self.transport.resume_reading()
            # uvicorn closes the socket when the app returns unless a close timer runs: this is it
            self.close_timer = self.loop.call_later(WS_LINGER, self.transport.close)

        def data_received(self, data: bytes) -> None:
            if self._cursor is None:  # the first call is the upgrade request, replayed by h11
                self._cursor = FrameCursor()
                super().data_received(data)
                return
            ops = self._cursor.feed(data)
            if not self._lingering:
                super().data_received(data)
            elif CLOSE_OPCODE in ops and not self.transport.is_closing():
                self.transport.close()  # the client answered our close: the handshake is done

    return LingeringWebSocketProtocol


def guarded_protocol(header_timeout: float, body_timeout: float, max_connections: int) -> type:
    """uvicorn's h11 protocol with a deadline for each request's head and body and a connection cap."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _guard: asyncio.TimerHandle | None = None
        _guard_kind = ""
        _opened = 0.0
        _upgraded = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._opened = time.monotonic()
            self._arm("head")
            if len(self.connections) > max_connections:
                idle = [c for c in self.connections
                        if c is not self and getattr(c, "_is_idle", lambda: False)()]
                victim = min(idle, key=lambda c: c._opened) if idle else self
                victim.transport.close()

        def _is_idle(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _arm(self, kind: str) -> None:
            if kind == self._guard_kind:
                return
            if self._guard is not None:
                self._guard.cancel()
                self._guard = None
            self._guard_kind = kind
            if kind:
                delay = header_timeout if kind == "head" else body_timeout
                self._guard = self.loop.call_later(delay, self._expire)

        def _expire(self) -> None:
            self._guard = None
            if not self.transport.is_closing():
                self.transport.close()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._upgraded:  # this call handed the connection to the WebSocket protocol
                return
            state = self.conn.their_state
            self._arm("head" if state is h11.IDLE else "body" if state is h11.SEND_BODY else "")

        def handle_websocket_upgrade(self, event: Any) -> None:
            # The WebSocket protocol takes the connection over; from here its life is bounded by
            # the session's own per-message read (idle timeout) and keep-alive pings, not by the
            # body deadline of the upgrade request (which used to close every session after it).
            self._upgraded = True
            self._arm("")
            super().handle_websocket_upgrade(event)

        def on_response_complete(self) -> None:
            self._arm("")  # between requests uvicorn's keep-alive timeout applies
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._arm("")
            super().connection_lost(exc)

    return GuardedH11Protocol
