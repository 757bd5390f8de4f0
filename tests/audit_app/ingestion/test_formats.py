"""The format registry (`audit_app.ingestion.formats`): names, kinds and labels the front
ends show."""

from __future__ import annotations

from audit_app.ingestion.formats import (
    AUTO_FORMAT,
    BENCHMARK_FORMATS,
    FORMAT_LABELS,
    FORMATS,
    FORMATS_BY_KIND,
    Format,
)
from audit_app.models import Upload
from benchmarks_app.converters import CONVERTERS


def test_every_token_log_and_billing_format_with_its_kind_label_and_description() -> None:
    assert list(FORMATS.values()) == [
        Format(
            name="litellm",
            kind="token_log",
            label="LiteLLM spend logs (CSV, JSON, JSONL)",
            description="a LiteLLM spend log",
        ),
        Format(
            name="otel",
            kind="token_log",
            label="OpenTelemetry GenAI spans (OTLP JSON)",
            description="an OpenTelemetry trace export",
        ),
        Format(
            name="litellm-callback",
            kind="token_log",
            label="LiteLLM callback payloads (StandardLoggingPayload JSON, JSONL)",
            description="a LiteLLM callback log",
        ),
        Format(
            name="generic",
            kind="token_log",
            label="Generic CSV / JSONL (canonical columns)",
            description="a generic request log",
        ),
        Format(
            name="focus",
            kind="billing",
            label="FOCUS 1.0-1.3 billing export (CSV, Parquet)",
            description="a FOCUS billing export",
        ),
        Format(
            name="aws-cur",
            kind="billing",
            label="AWS Cost and Usage Report (legacy or 2.0)",
            description="an AWS CUR billing export",
        ),
        Format(
            name="azure",
            kind="billing",
            label="Azure cost details (EA or MCA)",
            description="an Azure cost details billing export",
        ),
        Format(
            name="openai-costs-api",
            kind="billing",
            label="OpenAI cost and usage report (polled by an openai source)",
            description="an OpenAI cost and usage report",
        ),
        Format(
            name="anthropic-costs-api",
            kind="billing",
            label="Anthropic cost and usage report (polled by an anthropic source)",
            description="an Anthropic cost and usage report",
        ),
    ]
    assert FORMAT_LABELS["auto"] == "Detect automatically"


def test_formats_by_kind_are_the_upload_kinds() -> None:
    assert FORMATS_BY_KIND == {
        "auto": (
            "auto",
            "litellm",
            "otel",
            "litellm-callback",
            "generic",
            "focus",
            "aws-cur",
            "azure",
            "openai-costs-api",
            "anthropic-costs-api",
        ),
        Upload.Kind.TOKEN_LOG: ("auto", "litellm", "otel", "litellm-callback", "generic"),
        Upload.Kind.BILLING: (
            "auto",
            "focus",
            "aws-cur",
            "azure",
            "openai-costs-api",
            "anthropic-costs-api",
        ),
        Upload.Kind.BENCHMARK: BENCHMARK_FORMATS,
    }


def test_benchmark_formats_are_the_converters() -> None:
    """`audit_app` never imports `benchmarks_app`, so the names are listed twice; this keeps
    the two lists one."""
    assert BENCHMARK_FORMATS[0] == AUTO_FORMAT
    assert sorted(BENCHMARK_FORMATS[1:]) == sorted(CONVERTERS)
