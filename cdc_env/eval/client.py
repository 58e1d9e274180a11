"""The endpoint: one Chat Completions endpoint through the official ``openai`` client, its
reachability check, bounded retries, and the API key from the environment."""

from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import dataclass

from ..errors import CdcError
from .settings import EvalSettings, is_loopback, redact_url


class EndpointUnavailable(CdcError):
    """The endpoint cannot be reached, or refuses every request: the run stops (exit status 1)."""


class EndpointError(Exception):
    """The endpoint failed in a way retries did not cure (or that retrying cannot cure).

    ``fatal``: it would fail the same way for every rollout (bad key, no such model or route), so
    the run stops instead of filling the results with errors.
    """

    def __init__(self, message: str, fatal: bool = False, retries: int = 0) -> None:
        super().__init__(message)
        self.fatal, self.retries = fatal, retries


@dataclass
class Reply:
    message: dict  # the assistant message as it goes back into the conversation
    finish_reason: str | None
    refusal: str | None  # the endpoint's reason, when it refused or filtered
    tokens_in: int = 0
    tokens_out: int = 0


class Endpoint:
    """One Chat Completions endpoint through the official client, with bounded retries.

    Retried: 429, 408, 409, 5xx, time-outs and lost connections, up to ``retries`` times, waiting
    the server's ``Retry-After`` (capped) or an exponential backoff with jitter. A 400 whose code
    is ``content_filter`` is a refusal; any other 4xx raises ``EndpointError`` at once.
    """

    def __init__(self, settings: EvalSettings, api_key: str) -> None:
        import openai  # noqa: PLC0415 -- an optional dependency (the eval extra)

        self.openai = openai
        self.s = settings
        # a loopback endpoint (a local server, the stand-in) is never reached through a proxy
        local = {}
        if is_loopback(settings.base_url):
            local["http_client"] = openai.DefaultHttpxClient(trust_env=False)
        self.client = openai.OpenAI(base_url=settings.base_url, api_key=api_key,
                                    timeout=settings.timeout_s, max_retries=0, **local)
        self.retries_used = 0
        self._lock = threading.Lock()

    def check(self, timeout_s: float = 5.0) -> None:
        """Reach the endpoint once (``GET /models``) before anything else runs.

        Raises ``EndpointUnavailable`` with one line when it cannot be reached, does not answer
        within ``timeout_s``, refuses the key (401/403) or fails (5xx). A 404 passes: some servers
        have no model list, and an unknown model still stops the run at its first request.
        """
        oa = self.openai
        where = redact_url(self.s.base_url)
        try:
            self.client.with_options(timeout=min(timeout_s, self.s.timeout_s), max_retries=0).models.list()
        except oa.NotFoundError:
            return
        except oa.APITimeoutError:
            raise EndpointUnavailable(f"the endpoint {where} did not answer within "
                                      f"{min(timeout_s, self.s.timeout_s):g} s; nothing was run") from None
        except oa.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            reason = str(cause).splitlines()[0] if str(cause) else type(cause).__name__
            raise EndpointUnavailable(f"cannot reach the endpoint {where} ({reason[:160]}); "
                                      "nothing was run") from None
        except oa.APIStatusError as exc:
            status = exc.status_code
            if status in (401, 403):
                raise EndpointUnavailable(f"the endpoint {where} refuses the API key from "
                                          f"${self.s.api_key_env} (HTTP {status}); nothing was run") from None
            if status >= 500:
                raise EndpointUnavailable(f"the endpoint {where} fails (HTTP {status}: "
                                          f"{str(exc.message)[:120]}); nothing was run") from None

    def _delay(self, attempt: int, exc: Exception) -> float:
        response = getattr(exc, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        try:
            if header is not None:
                return min(self.s.backoff_cap_s, max(0.0, float(header)))
        except ValueError:
            pass
        return min(self.s.backoff_cap_s, self.s.backoff_s * 2 ** attempt) * random.uniform(0.5, 1.0)

    def chat(self, messages: list[dict], tools: list[dict] | None = None) -> tuple[Reply, int]:
        """(the reply, retries it took)."""
        oa = self.openai
        kw: dict = {"model": self.s.model, "messages": messages}
        if tools:
            kw["tools"] = tools
        if self.s.temperature is not None:
            kw["temperature"] = self.s.temperature
        if self.s.max_tokens is not None:
            kw["max_tokens"] = self.s.max_tokens
        retries = 0
        while True:
            try:
                if self.s.stream:  # the whole stream inside the retry loop: a cut stream is retried
                    resp = collect_stream(self.client.chat.completions.create(
                        **kw, stream=True, stream_options={"include_usage": True}))
                else:
                    resp = self.client.chat.completions.create(**kw)
                break
            except oa.BadRequestError as exc:
                if getattr(exc, "code", None) == "content_filter":
                    return Reply({"role": "assistant", "content": None}, "content_filter",
                                 f"content_filter: {exc.message}"), retries
                raise EndpointError(f"HTTP 400: {exc.message}") from None
            except (oa.RateLimitError, oa.InternalServerError, oa.APITimeoutError,
                    oa.APIConnectionError, oa.APIStatusError) as exc:
                status = getattr(exc, "status_code", None)
                retryable = status is None or status in (408, 409, 429) or status >= 500
                what = f"HTTP {status}" if status else type(exc).__name__
                if not retryable:
                    raise EndpointError(f"{what}: {getattr(exc, 'message', exc)}",
                                        fatal=status in (401, 403, 404)) from None
                if retries >= self.s.retries:
                    raise EndpointError(f"{what} after {retries} retries: "
                                        f"{getattr(exc, 'message', exc)}", retries=retries) from None
                time.sleep(self._delay(retries, exc))
                retries += 1
        with self._lock:
            self.retries_used += retries
        if not resp.choices:
            raise EndpointError("the endpoint answered with no choices")
        choice = resp.choices[0]
        msg = choice.message
        calls = [{"id": tc.id, "type": "function",
                  "function": {"name": tc.function.name, "arguments": tc.function.arguments}}
                 for tc in (msg.tool_calls or []) if getattr(tc, "function", None) is not None]
        # null content only beside tool calls: some servers reject an empty assistant turn otherwise
        message: dict = {"role": "assistant", "content": msg.content if msg.content or calls else ""}
        if calls:
            message["tool_calls"] = calls
        refusal = getattr(msg, "refusal", None) or None
        if refusal is None and choice.finish_reason == "content_filter":
            refusal = "content_filter" + (f": {msg.content}" if msg.content else "")
        usage = resp.usage
        return Reply(message, choice.finish_reason, refusal,
                     getattr(usage, "prompt_tokens", 0) or 0 if usage else 0,
                     getattr(usage, "completion_tokens", 0) or 0 if usage else 0), retries


def collect_stream(chunks) -> object:
    """A streamed chat completion (``chat.completion.chunk`` objects) -> an object shaped like the
    unstreamed one (``choices[0].message`` with ``content``, ``tool_calls``, ``refusal``;
    ``finish_reason``; ``usage``): content and refusal deltas concatenated, tool calls assembled
    by their ``index`` (id and name from the first delta, arguments concatenated)."""
    from types import SimpleNamespace as NS  # noqa: PLC0415

    content: list[str] = []
    refusal: list[str] = []
    calls: dict[int, dict] = {}
    finish, usage, seen = None, None, False
    for chunk in chunks:
        usage = getattr(chunk, "usage", None) or usage
        for choice in chunk.choices or []:
            if choice.index != 0:
                continue
            seen = True
            d = choice.delta
            if d is not None:
                content.append(d.content or "")
                refusal.append(getattr(d, "refusal", None) or "")
                for tc in d.tool_calls or []:
                    c = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                    c["id"] = c["id"] or tc.id
                    if tc.function is not None:
                        c["name"] += tc.function.name or ""
                        c["arguments"] += tc.function.arguments or ""
            finish = choice.finish_reason or finish
    if not seen:
        return NS(choices=[], usage=usage)
    tool_calls = [NS(id=c["id"], function=NS(name=c["name"], arguments=c["arguments"]))
                  for _, c in sorted(calls.items())] or None
    message = NS(content="".join(content) or None, tool_calls=tool_calls, refusal="".join(refusal) or None)
    return NS(choices=[NS(message=message, finish_reason=finish)], usage=usage)


def api_key_for(settings: EvalSettings) -> str:
    """The API key from the environment variable named by ``api_key_env`` (never from argv or a file).

    A loopback endpoint (a local server, the stand-in) may run without one.
    """

    key = os.environ.get(settings.api_key_env, "")
    if key:
        return key
    if is_loopback(settings.base_url):
        return "no-key"
    raise CdcError(f"no API key: set the environment variable {settings.api_key_env} "
                   "(or name another with --api-key-env)")
