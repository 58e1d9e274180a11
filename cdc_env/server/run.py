"""Running the app: the listening socket, uvicorn with the guarded protocol, a server in a thread."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import CdcError
from .app import create_app
from .config import DEFAULT_MAX_BODY, ServerConfig
from .episodes import EnvServer
from .limits import guarded_protocol, ws_limits


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (``port`` 0 picks a free one; read it back with ``getsockname``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted connections only when the
    # socket says it is TCP; without it every keep-alive response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    _raise_fd_limit()
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CdcError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _raise_fd_limit() -> None:
    """Open connections are file descriptors: take the hard limit (idle clients must not starve others)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def uvicorn_server(app: Any, config: ServerConfig | None = None) -> Any:
    import uvicorn

    c = config or getattr(getattr(app, "state", None), "env_server", None)
    c = c.config if isinstance(c, EnvServer) else c
    http = guarded_protocol(c.header_timeout, c.body_timeout, c.max_connections) if c is not None else "h11"
    ws = ws_limits(c.max_body if c is not None else DEFAULT_MAX_BODY)
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                         timeout_keep_alive=30, http=http, **ws))


@dataclass
class RunningServer:
    url: str
    server: Any
    thread: threading.Thread
    app: Any

    @property
    def state(self) -> EnvServer:
        return self.app.state.env_server

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=60)


@contextlib.contextmanager
def serve_in_thread(config: ServerConfig, host: str = "127.0.0.1") -> Iterator[RunningServer]:
    """Run a real uvicorn server on ``host`` with an ephemeral port in a thread (tests, benchmarks)."""
    app = create_app(config)
    sock = bind(host, 0)
    server = uvicorn_server(app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not server.started:
        server.should_exit = True
        raise CdcError("the server did not start")
    running = RunningServer(f"http://{host}:{sock.getsockname()[1]}", server, thread, app)
    try:
        yield running
    finally:
        running.stop()
        sock.close()
