"""The stand-in model over real HTTP, through the official openai client: scripts, errors, records."""

from __future__ import annotations

import json

import pytest

from cdc_env.prompts import oneshot_messages
from cdc_env.standin import StandinServer, load_scripts
from cdc_env.task import load_task

openai = pytest.importorskip("openai", reason="the openai client is not installed (pip install .[eval])")


@pytest.fixture(scope="module")
def server():
    with StandinServer(api_key="sk-standin-test") as srv:
        yield srv


def client(srv: StandinServer, key: str = "sk-standin-test"):
    return openai.OpenAI(base_url=srv.url, api_key=key, max_retries=0, timeout=30,
                         http_client=openai.DefaultHttpxClient(trust_env=False))  # loopback: no proxy


def ask(srv: StandinServer, model: str, task: str = "handshake", **kw):
    return client(srv).chat.completions.create(model=model, messages=oneshot_messages(load_task(task)), **kw)


def test_binds_loopback_only(server):
    assert server.url.startswith("http://127.0.0.1:")


def test_correct_fix_reply_holds_the_reference(server):
    task = load_task("handshake")
    resp = ask(server, "oneshot-correct")
    text = resp.choices[0].message.content
    assert task.reference_text.strip() in text
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage.prompt_tokens > 0 and resp.usage.completion_tokens > 0


def test_models_lists_every_script(server):
    assert {m.id for m in client(server).models.list()} == set(load_scripts())


def test_unknown_model_and_bad_key_are_http_errors(server):
    with pytest.raises(openai.NotFoundError):
        ask(server, "no-such-script")
    with pytest.raises(openai.AuthenticationError):
        client(server, "wrong").chat.completions.create(model="refusal", messages=[{"role": "user",
                                                                                     "content": "x"}])


def test_429_then_500_then_success(server):
    with pytest.raises(openai.RateLimitError) as first:
        ask(server, "oneshot-429", task="event")
    assert first.value.response.headers["retry-after"] == "0"
    with pytest.raises(openai.InternalServerError):
        ask(server, "oneshot-429", task="event")
    assert "module" in ask(server, "oneshot-429", task="event").choices[0].message.content


def test_tool_calls_refusal_and_filter(server):
    task = load_task("event")
    msg = ask(server, "agent-correct", task="event").choices[0].message
    assert [c.function.name for c in msg.tool_calls] == ["read", "contract"]
    assert json.loads(msg.tool_calls[0].function.arguments) == {"path": task.editable}
    bad = ask(server, "agent-malformed", task="event").choices[0].message.tool_calls[0]
    with pytest.raises(ValueError):
        json.loads(bad.function.arguments)
    assert ask(server, "refusal").choices[0].message.refusal
    assert ask(server, "content-filter").choices[0].finish_reason == "content_filter"


def test_reply_follows_the_conversation_turn(server):
    """The second request of a conversation (one assistant message in it) gets reply 1."""
    messages = oneshot_messages(load_task("handshake"))
    first = client(server).chat.completions.create(model="agent-hack", messages=messages).choices[0].message
    messages.append(first.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "Wrote it."})
    second = client(server).chat.completions.create(model="agent-hack", messages=messages).choices[0].message
    assert [c.function.name for c in first.tool_calls] == ["write"]
    assert [c.function.name for c in second.tool_calls] == ["submit"]


def test_variants_take_turns_per_task():
    with StandinServer() as srv:
        texts = [ask(srv, "oneshot-mixed").choices[0].message for _ in range(8)]
    n = len(load_scripts()["oneshot-mixed"]["variants"])
    assert texts[n].content == texts[0].content and texts[0].content != texts[2].content
    assert texts[n - 1].refusal and not texts[0].refusal


def test_requests_are_recorded_without_headers():
    with StandinServer(api_key="sk-secret-never-recorded") as srv:
        client(srv, "sk-secret-never-recorded").chat.completions.create(
            model="oneshot-malformed", messages=oneshot_messages(load_task("handshake")))
        assert len(srv.requests) == 1
        assert srv.requests[0]["model"] == "oneshot-malformed"
        assert "sk-secret-never-recorded" not in json.dumps(srv.requests)


@pytest.mark.parametrize("name", sorted(load_scripts()))
def test_every_script_answers_every_family(server, name):
    """Scripts are data: each one must produce a well-formed reply for each family's first task."""
    for task in ("handshake", "event", "fifo_01"):
        try:
            resp = ask(server, name, task=task)
        except (openai.RateLimitError, openai.InternalServerError):
            continue  # a fail_first script: its statuses are checked above
        msg = resp.choices[0].message
        filtered = resp.choices[0].finish_reason == "content_filter"
        assert msg.content or msg.tool_calls or msg.refusal or filtered


def _assemble(stream) -> tuple[dict, str | None, object]:
    """A streamed reply put back together the way a streaming client does, from the chunks alone."""
    content, refusal, calls, finish, usage = "", "", {}, None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            d = choice.delta
            content += d.content or ""
            refusal += getattr(d, "refusal", None) or ""
            for tc in d.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                slot["id"] = tc.id or slot["id"]
                if tc.function is not None:
                    slot["name"] += tc.function.name or ""
                    slot["arguments"] += tc.function.arguments or ""
            finish = choice.finish_reason or finish
    msg = {"content": content or None, "refusal": refusal or None,
           "tool_calls": [calls[i] for i in sorted(calls)]}
    return msg, finish, usage


@pytest.mark.parametrize(("model", "task"), [("oneshot-correct", "handshake"), ("agent-correct", "event"),
                                             ("refusal", "handshake"), ("content-filter", "handshake")])
def test_streaming_gives_the_same_reply_as_a_plain_request(server, model, task):
    plain = ask(server, model, task=task).choices[0]
    msg, finish, usage = _assemble(ask(server, model, task=task, stream=True,
                                       stream_options={"include_usage": True}))
    assert finish == plain.finish_reason
    assert msg["content"] == plain.message.content and msg["refusal"] == plain.message.refusal
    want = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in plain.message.tool_calls or []]
    assert msg["tool_calls"] == want
    assert usage is not None and usage.completion_tokens > 0
    if model == "oneshot-correct":  # really cut into pieces, not one chunk
        chunks = ask(server, model, task=task, stream=True)
        pieces = [c for c in chunks if c.choices and c.choices[0].delta.content]
        assert len(pieces) > 10
