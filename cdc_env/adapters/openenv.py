"""OpenEnv client with a bearer token: ``TokenEnvClient`` is openenv-core's stock
``GenericEnvClient`` whose WebSocket handshake carries ``Authorization: Bearer <token>`` (the stock
client sends no headers, and ``cdc-env serve --token-env VAR`` requires one on every request)::

    from cdc_env.adapters.openenv import TokenEnvClient
    with TokenEnvClient("http://HOST:8765/openenv", token=os.environ["CDC_TOKEN"]).sync() as env:
        first = env.reset(task="handshake")

Everything else (messages, reset/step/state, ``.sync()``) is the stock client's. It relies on the
client's WebSocket URL and limits attributes (``_ws_url``, ``_connect_timeout``,
``_max_message_size``) of openenv-core 0.3; tests/test_adapters_openenv.py drives it against a
server with a token. Only this module imports openenv.
"""

from __future__ import annotations

from typing import Any

from openenv.core.generic_client import GenericEnvClient
from websockets.asyncio.client import connect as ws_connect


class TokenEnvClient(GenericEnvClient):
    """``GenericEnvClient`` that sends ``Authorization: Bearer <token>`` when it connects."""

    def __init__(self, base_url: str, token: str, **kwargs: Any) -> None:
        super().__init__(base_url, **kwargs)
        self._token = token

    async def connect(self) -> TokenEnvClient:
        if self._ws is None:
            try:
                self._ws = await ws_connect(self._ws_url, open_timeout=self._connect_timeout,
                                            max_size=self._max_message_size,
                                            additional_headers={"Authorization": f"Bearer {self._token}"})
            except Exception as exc:  # the stock client's contract: ConnectionError
                raise ConnectionError(f"Failed to connect to {self._ws_url}: {exc}") from exc
        return self
