"""The stand-in model: a local OpenAI-compatible HTTP server that replays scripted replies.

It answers ``POST /v1/chat/completions`` (and ``GET /v1/models``) over real HTTP on 127.0.0.1, so
an evaluation run talks to it through the official ``openai`` client exactly as it would talk to a
hosted model. The request's ``model`` names a script in ``agents/standin/*.json``; the script is
a list of replies, and the reply sent is chosen by how many assistant messages the conversation
already holds (reply 0 answers the first request, reply 1 the request after the model's first
turn, ...; past the end the last reply repeats), so one script serves a one-shot answer or a
whole tool-calling episode without the server keeping conversation state.

A script may instead hold ``variants``, a list of such reply lists: each new conversation about a
task gets the next variant in turn (a running one keeps the variant its first reply came from;
variants must differ in their first reply), so one "model" can answer the K samples of a task
differently. ``fail_first`` is for plain scripts only: identical first requests of two samples
cannot be told from a retry.

A reply (one JSON object) holds any of:
    ``content``: text; ``{design}`` in it becomes the design named by ``design``; ``{editable}``,
        ``{top}``, ``{id}`` the task's names.
    ``design``: ``reference``, ``defective``, ``raw_crossing`` or ``compile_error`` (as built by
        ``cdc_env.scripted.design_text``), ``fixture:<name>`` (a registry fixture's submission), or
        ``{"<task id>": KIND, "*": KIND}`` to choose by task.
    ``tool_calls``: a list of ``{"name", "arguments"}``; ``arguments`` is an object (placeholders
        and ``{"design": KIND}`` values filled in) or, in ``raw_arguments``, the exact text to send
        (for malformed JSON).
    ``refusal``: the refusal text (OpenAI's ``message.refusal``); ``finish_reason``: e.g.
        ``content_filter`` or ``length``.
    ``delay_s``: seconds to wait before a reply (for client time-outs).
    ``fail_first``: HTTP statuses (429, 500, ...) answered, with ``Retry-After: 0``, to the first
        attempts at this very request before the reply is sent.
The task comes from the conversation's first user message (``Task: <id>``, or at the symptom and
minimal rungs ``Task: <top module>`` of a public task), which both the one-shot prompt and
``CdcRepairEnv.reset()`` begin with.

Every request body is recorded (``StandinServer.requests``, and a JSONL file with ``log``) so that
tests can check on the server side what the model was shown -- e.g. that no grade report ever
reached it. Headers are not recorded (they hold the API key).

With ``"stream": true`` the same reply comes as server-sent events (``chat.completion.chunk``
objects, the content and each tool call's arguments cut into pieces, then ``data: [DONE]``; with
``stream_options.include_usage`` a last chunk carries the usage), so harnesses that stream --
``vf-eval``, agent frameworks -- can be tested against it without a key.

Not covered: embeddings, the Responses API, or anything a model does beyond replaying its script.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import paths
from .errors import CdcError
from .scripted import design_text
from .task import Task, list_tasks, load_task

HOST = "127.0.0.1"
_MAX_BODY = 8 << 20


def scripts_dir() -> Path:
    return paths.agents_dir("standin")


def load_scripts() -> dict[str, dict]:
    """Every stand-in script by name (= file name = the ``model`` a client asks for)."""
    out: dict[str, dict] = {}
    for p in sorted(scripts_dir().glob("*.json")):
        try:
            script = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CdcError(f"cannot read stand-in script {p}: {exc}") from None
        lists = script.get("variants") or [script.get("replies")]
        if script.get("name") != p.stem or not all(isinstance(r, list) and r for r in lists):
            raise CdcError(f"{p}: a stand-in script needs 'name' (= the file name) and a non-empty "
                           "list of 'replies' (or a list of such lists, 'variants')")
        out[p.stem] = script
    return out


def _text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def task_of(messages: list[dict]) -> Task:
    """The task a conversation is about: ``Task: <name>`` at the start of its first user message --
    a task id, or at the symptom and minimal rungs the top module of a public task
    (cdc_env.prompts.task_name)."""
    for m in messages:
        if m.get("role") == "user":
            first = _text_of(m).lstrip().split("\n", 1)[0]
            if first.startswith("Task:"):
                name = first[len("Task:"):].split()[0] if first[len("Task:"):].split() else ""
                by_top = next((t for t in list_tasks() if t.top == name), None)
                return load_task(name) if by_top is None else by_top
            break
    raise CdcError("the stand-in finds no 'Task: <id>' line at the start of the first user message")


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))  # a rough count: usage figures need only be plausible


def design_for(task: Task, kind: str | dict) -> str:
    """A design built from the task: a ``cdc_env.scripted`` kind, ``fixture:<name>`` (that fixture's
    submission), or ``{task id: kind, "*": kind}`` to choose by task."""
    if isinstance(kind, dict):
        kind = kind.get(task.id, kind.get("*", ""))
    if isinstance(kind, str) and kind.startswith("fixture:"):
        folder = paths.fixtures_dir() / kind[len("fixture:"):]
        for name in ("submission.v", "submission.diff"):
            if (folder / name).is_file():
                return (folder / name).read_text(encoding="utf-8")
        raise CdcError(f"the stand-in has no fixture submission in {folder.name}")
    return design_text(task, str(kind))


def _fill(value: object, task: Task) -> object:
    """Tool-call arguments: ``{editable}``/``{top}``/``{id}`` in strings, ``{"design": KIND}`` values."""
    if isinstance(value, str):
        for key, name in (("{editable}", task.editable), ("{top}", task.top), ("{id}", task.id)):
            value = value.replace(key, name)
        return value
    if isinstance(value, dict) and set(value) == {"design"}:
        return design_for(task, value["design"])
    if isinstance(value, dict):
        return {k: _fill(v, task) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, task) for v in value]
    return value


def build_reply(replies: list[dict], messages: list[dict], task: Task) -> tuple[dict, list[int], float]:
    """(the chat.completion ``choices[0]`` for this conversation, statuses to fail with first,
    seconds to wait before answering)."""
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    spec = replies[min(turn, len(replies) - 1)]
    message: dict = {"role": "assistant", "content": None}
    if spec.get("content") is not None:
        text = _fill(spec["content"], task)
        if "design" in spec:  # last: the design's own text may hold braces
            text = text.replace("{design}", design_for(task, spec["design"]))
        message["content"] = text
    if "refusal" in spec:
        message["refusal"] = spec["refusal"]
    calls = []
    for i, call in enumerate(spec.get("tool_calls", [])):
        arguments = call["raw_arguments"] if "raw_arguments" in call else \
            json.dumps(_fill(call.get("arguments", {}), task))
        calls.append({"id": f"call_{turn}_{i}", "type": "function",
                      "function": {"name": call["name"], "arguments": arguments}})
    if calls:
        message["tool_calls"] = calls
    finish = spec.get("finish_reason") or ("tool_calls" if calls else "stop")
    return {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}, \
        list(spec.get("fail_first", [])), float(spec.get("delay_s", 0))


def _first_reply_key(model: str, message: dict) -> str:
    """What identifies a conversation's first assistant reply, however the client re-serializes it."""
    calls = [(c.get("function", {}).get("name"), c.get("function", {}).get("arguments"))
             for c in message.get("tool_calls") or []]
    return hashlib.sha256(json.dumps([model, message.get("content") or "", calls]).encode()).hexdigest()


class StandinServer:
    """The stand-in on 127.0.0.1 (port 0: any free port); use as a context manager or start/stop.

    Attributes: ``url`` (the base URL for the ``openai`` client, ending in ``/v1``), ``requests``
    (every request body received, in order, failed attempts included).
    """

    def __init__(self, port: int = 0, *, log: Path | None = None, scripts: dict[str, dict] | None = None,
                 api_key: str | None = None) -> None:
        self.scripts = scripts if scripts is not None else load_scripts()
        self.requests: list[dict] = []
        self.log = log
        self.api_key = api_key
        self._attempts: dict[str, int] = {}
        self._started: dict[str, int] = {}
        self._variant_of: dict[str, int] = {}  # first reply -> its variant
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((HOST, port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self._httpd.server_address[1]}/v1"

    def start(self) -> StandinServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="standin", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> StandinServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, body: dict) -> None:
        with self._lock:
            self.requests.append(body)
            if self.log is not None:
                with self.log.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(body) + "\n")

    def attempt(self, body: dict) -> int:
        """How many times this exact request was seen before (for ``fail_first``)."""
        key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        with self._lock:
            n = self._attempts.get(key, 0)
            self._attempts[key] = n + 1
            return n

    def pick(self, script: dict, model: str, task: Task, messages: list[dict]) -> tuple[list[dict], int]:
        """(the replies, the variant): a script with ``variants`` gives each new conversation of a
        task the next one in turn; a running conversation keeps the one its first reply came from."""
        variants = script.get("variants")
        if not variants:
            return script["replies"], 0
        first = next((m for m in messages if m.get("role") == "assistant"), None)
        with self._lock:
            if first is not None:
                return variants[self._variant_of.get(_first_reply_key(model, first), 0)], 0
            key = f"{model}/{task.id}"
            variant = self._started.get(key, 0) % len(variants)
            self._started[key] = self._started.get(key, 0) + 1
        return variants[variant], variant

    def remember(self, model: str, variant: int, choice: dict) -> None:
        with self._lock:
            self._variant_of[_first_reply_key(model, choice["message"])] = variant

    def answer(self, body: dict) -> tuple[int, dict]:
        """(HTTP status, JSON body) for one chat.completions request."""
        model, messages = body.get("model"), body.get("messages")
        if not isinstance(messages, list) or not messages:
            return 400, _error("messages must be a non-empty list", "invalid_request_error")
        script = self.scripts.get(model) if isinstance(model, str) else None
        if script is None:
            return 404, _error(f"the stand-in has no script named {model!r} (known: "
                               f"{', '.join(self.scripts)})", "model_not_found")
        try:
            task = task_of(messages)
            replies, variant = self.pick(script, model, task, messages)
            choice, fail_first, delay = build_reply(replies, messages, task)
            if not any(m.get("role") == "assistant" for m in messages):
                self.remember(model, variant, choice)
        except CdcError as exc:
            return 400, _error(str(exc), "invalid_request_error")
        n = self.attempt(body)
        if n < len(fail_first):
            status = int(fail_first[n])
            return status, _error(f"stand-in: scripted HTTP {status} (attempt {n + 1})",
                                  "rate_limit_exceeded" if status == 429 else "server_error")
        time.sleep(delay)
        prompt = json.dumps(messages)
        completion = json.dumps(choice["message"])
        return 200, {
            "id": f"chatcmpl-standin-{len(self.requests)}", "object": "chat.completion",
            "created": int(time.time()), "model": model, "choices": [choice],
            "usage": {"prompt_tokens": _tokens(prompt), "completion_tokens": _tokens(completion),
                      "total_tokens": _tokens(prompt) + _tokens(completion)},
        }


_PIECE = 48  # characters per streamed piece


def _pieces(text: str) -> list[str]:
    return [text[i:i + _PIECE] for i in range(0, len(text), _PIECE)] or [""]


def stream_chunks(completion: dict, include_usage: bool = False) -> list[dict]:
    """A chat.completion cut into the ``chat.completion.chunk`` objects a streaming server sends."""
    choice = completion["choices"][0]
    msg = choice["message"]
    head = {"id": completion["id"], "object": "chat.completion.chunk", "created": completion["created"],
            "model": completion["model"]}

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    out = [chunk({"role": "assistant", "content": ""})]
    if msg.get("refusal") is not None:
        out += [chunk({"refusal": piece}) for piece in _pieces(msg["refusal"])]
    if msg.get("content"):
        out += [chunk({"content": piece}) for piece in _pieces(msg["content"])]
    for i, call in enumerate(msg.get("tool_calls") or []):
        fn = call["function"]
        out.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                          "function": {"name": fn["name"], "arguments": ""}}]}))
        out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
                for piece in _pieces(fn["arguments"]) if piece]
    out.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        out.append({**head, "choices": [], "usage": completion["usage"]})
    return out


def _error(message: str, code: str) -> dict:
    return {"error": {"message": message, "type": code, "code": code, "param": None}}


def _handler_for(server: StandinServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # quiet: tests and CLI log bodies
            pass

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429 or status >= 500:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (its time-out)
                self.close_connection = True

        def _stream(self, completion: dict, include_usage: bool) -> None:
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")  # the end of the body is the end of the stream
                self.end_headers()
                for c in stream_chunks(completion, include_usage):
                    self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

        def _authorized(self) -> bool:
            return server.api_key is None or \
                self.headers.get("Authorization", "") == f"Bearer {server.api_key}"

        def do_GET(self) -> None:
            if not self._authorized():
                return self._send(401, _error("bad API key", "invalid_api_key"))
            if self.path.rstrip("/") == "/v1/models":
                return self._send(200, {"object": "list", "data": [
                    {"id": name, "object": "model", "created": 0, "owned_by": "cdc-env-standin"}
                    for name in server.scripts]})
            self._send(404, _error(f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > _MAX_BODY:
                return self._send(413, _error("request too large", "invalid_request_error"))
            raw = self.rfile.read(length)
            if not self._authorized():
                return self._send(401, _error("bad API key", "invalid_api_key"))
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._send(404, _error(f"no route {self.path}", "not_found"))
            try:
                body = json.loads(raw)
            except ValueError:
                return self._send(400, _error("the body is not JSON", "invalid_request_error"))
            if not isinstance(body, dict):
                return self._send(400, _error("the body is not a JSON object", "invalid_request_error"))
            server.record(body)
            status, answer = server.answer(body)
            if status == 200 and body.get("stream") is True:
                options = body.get("stream_options")
                usage = isinstance(options, dict) and options.get("include_usage") is True
                return self._stream(answer, usage)
            self._send(status, answer)

    return Handler
