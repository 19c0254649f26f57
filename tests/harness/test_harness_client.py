"""OpenAIClient against httpx.MockTransport (no network)."""

from __future__ import annotations

import json

import httpx
import pytest

from harness.clients.openai_compat import EngineError, OpenAIClient

BODY = {
    "choices": [{"message": {"role": "assistant", "content": '{"a": 1}'}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3},
    "timings": {"prompt_ms": 1.5, "predicted_ms": 2.5},
}


def _client(handler, **kwargs) -> OpenAIClient:
    return OpenAIClient("http://engine.local:8080/v1/", "tiny", transport=httpx.MockTransport(handler), **kwargs)


def test_chat_request_and_reply() -> None:
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen["url"] = str(request.url)
        seen["payload"] = json.loads(request.content)
        return httpx.Response(200, json=BODY)

    fmt = {"type": "json_schema", "json_schema": {"name": "s", "strict": True, "schema": {}}}
    with _client(handler) as client:
        reply = client.chat(
            [{"role": "user", "content": "hi"}], response_format=fmt, max_tokens=32, temperature=0.0, seed=5
        )
    assert seen["url"] == "http://engine.local:8080/v1/chat/completions"
    assert seen["payload"] == {
        "model": "tiny",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.0,
        "max_tokens": 32,
        "cache_prompt": False,
        "stream": False,
        "seed": 5,
        "response_format": fmt,
    }
    assert (reply.content, reply.usage, reply.timings, reply.finish_reason) == (
        '{"a": 1}',
        BODY["usage"],
        BODY["timings"],
        "stop",
    )
    assert reply.seconds >= 0 and reply.raw == BODY


def test_seed_omitted_when_none() -> None:
    payloads = []

    def handler(request):
        payloads.append(json.loads(request.content))
        return httpx.Response(200, json=BODY)

    _client(handler).chat([{"role": "user", "content": "x"}])
    assert "seed" not in payloads[0] and "response_format" not in payloads[0]


@pytest.mark.parametrize(
    ("handler", "message"),
    [
        (lambda r: httpx.Response(500, text="boom"), "HTTP 500 from /v1/chat/completions: boom"),
        (lambda r: httpx.Response(400, json={"error": "context"}), "HTTP 400"),
        (lambda r: httpx.Response(200, text="not json"), "unreadable reply"),
        (lambda r: httpx.Response(200, json={"choices": []}), "unreadable reply"),
    ],
)
def test_bad_replies_raise_engine_error(handler, message) -> None:
    with pytest.raises(EngineError, match=message):
        _client(handler).chat([{"role": "user", "content": "x"}])


def test_transport_errors_and_timeouts_raise_engine_error() -> None:
    def refuse(request):
        raise httpx.ConnectError("connection refused", request=request)

    def slow(request):
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(EngineError, match="transport error"):
        _client(refuse).chat([])
    with pytest.raises(EngineError, match="timeout after 7s"):
        _client(slow, timeout=7).chat([])
    with pytest.raises(EngineError):
        _client(refuse).ping()


def test_ping_and_no_proxies_from_environment(monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:1")
    monkeypatch.setenv("ALL_PROXY", "http://proxy.invalid:1")
    client = _client(lambda r: httpx.Response(404))
    client.ping()  # reachable, even without /v1/models
    assert client._http.trust_env is False
    with pytest.raises(EngineError, match="HTTP 503"):
        _client(lambda r: httpx.Response(503)).ping()


def test_prompt_cache_is_sent_only_when_asked() -> None:
    """cache_prompt: false unless the profile asks for prompt-cache reuse (an inexact mode)."""
    payloads = []

    def handler(request):
        payloads.append(json.loads(request.content))
        return httpx.Response(200, json=BODY)

    _client(handler, cache_prompt=True).chat([{"role": "user", "content": "x"}])
    _client(handler).chat([{"role": "user", "content": "x"}])
    assert [p["cache_prompt"] for p in payloads] == [True, False]


def test_the_cache_per_scenario_starts_each_scenario_uncached() -> None:
    """Per scenario: each scenario's first request reads no cache, its later ones may."""
    payloads = []

    def handler(request):
        payloads.append(json.loads(request.content))
        return httpx.Response(200, json=BODY)

    client = _client(handler, cache_prompt=True, per_scenario=True)
    for steps in (3, 2):
        client.begin_scenario()
        for _ in range(steps):
            client.chat([{"role": "user", "content": "x"}])
    assert [p["cache_prompt"] for p in payloads] == [False, True, True, False, True]
