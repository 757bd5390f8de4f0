"""Calls through the openai SDK, run in the LLM clients' virtualenv (tests/support/llm_clients.py),
never imported by the tests.

Reads one JSON object on stdin: ``base_url``, ``api_key``, ``concurrency``, ``calls`` (each
``model``, ``stream``, and optional ``metadata`` and ``tags`` sent in the request body), and
optionally ``instrumentation`` (``openai-v2`` or ``openllmetry``) with ``otlp`` (``endpoint``,
``token``): the SDK is then instrumented and its spans exported over OTLP/HTTP, flushed before
the script ends. Prints a JSON list, one object per call in order: ``id`` (the response id),
``model``, ``stream``, ``prompt_tokens`` and ``completion_tokens`` (the answer's usage; a
streamed call asks for it with ``stream_options.include_usage``) and ``cost`` (LiteLLM's:
the ``x-litellm-response-cost`` header, or the streamed usage's ``cost``; null if absent).
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def instrument(name: str, otlp: dict[str, str]) -> Any:
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create(otlp.get("resource") or {"service.name": "llm-client"})
    provider = TracerProvider(resource=resource)
    exporter = OTLPSpanExporter(
        endpoint=otlp["endpoint"], headers={"Authorization": f"Bearer {otlp['token']}"}
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    if name == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    elif name == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    else:
        raise SystemExit(f"unknown instrumentation {name!r}")
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    return provider


def body_extras(call: dict[str, Any]) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if call.get("metadata") is not None:
        extra["metadata"] = call["metadata"]
    if call.get("tags") is not None:
        extra["tags"] = call["tags"]
    return extra


def usage_of(usage: Any) -> dict[str, Any]:
    dumped = usage.model_dump() if usage is not None else {}
    return {
        "prompt_tokens": dumped.get("prompt_tokens"),
        "completion_tokens": dumped.get("completion_tokens"),
        "usage_cost": dumped.get("cost"),
    }


def one_call(client: Any, call: dict[str, Any], raw: bool) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "model": call["model"],
        "messages": [{"role": "user", "content": call.get("prompt", "Summarise the day.")}],
        "extra_body": body_extras(call),
    }
    if call.get("headers"):
        arguments["extra_headers"] = call["headers"]
    if call.get("stream"):
        arguments.update(stream=True, stream_options={"include_usage": True})
    completions = client.chat.completions
    header_cost = None
    if raw:
        answer = completions.with_raw_response.create(**arguments)
        header_cost = answer.headers.get("x-litellm-response-cost")
        result = answer.parse()
    else:
        result = completions.create(**arguments)
    if call.get("stream"):
        response_id, usage, model = None, None, None
        for chunk in result:
            response_id = response_id or chunk.id
            model = model or chunk.model
            usage = chunk.usage or usage
    else:
        response_id, usage, model = result.id, result.usage, result.model
    found = usage_of(usage)
    cost = header_cost if header_cost not in (None, "", "None") else found.pop("usage_cost")
    found.pop("usage_cost", None)
    return {
        "id": response_id,
        "model": model,
        "stream": bool(call.get("stream")),
        **found,
        "cost": None if cost is None else str(cost),
    }


def main() -> None:
    spec = json.load(sys.stdin)
    provider = None
    if spec.get("instrumentation"):
        provider = instrument(spec["instrumentation"], spec["otlp"])
    from openai import OpenAI

    client = OpenAI(base_url=spec["base_url"], api_key=spec["api_key"], max_retries=0)
    # The raw response carries LiteLLM's cost header; instrumented runs call `create` as an
    # application does.
    raw = provider is None
    with ThreadPoolExecutor(max_workers=int(spec.get("concurrency") or 1)) as pool:
        answers = list(pool.map(lambda call: one_call(client, call, raw), spec["calls"]))
    if provider is not None:
        provider.force_flush(30_000)
        provider.shutdown()
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
