"""One provider name everywhere: the normaliser, ingest (row-by-row and columnar paths), the
URL filter, and bill lines in reconciliation."""

from __future__ import annotations

import io
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from audit_app.costs.providers import (
    PROVIDER_ALIASES,
    billing_provider,
    normalize_provider,
    usage_provider,
)
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.token_logs import read_requests
from audit_app.ingestion.uploads import upload_create
from audit_app.models import DailyRollup, HourlyRollup, Upload
from audit_app.reporting.filters import SpendFilters, parse_filters
from audit_app.reporting.selectors import filter_choices
from audit_app.reporting.spend import spend_breakdown
from tests.support.spelled_logs import litellm_csv, otel_span

DAY = date(2026, 11, 2)
MODEL = "anthropic.claude-haiku-4-5"


def _litellm(rows: int) -> bytes:
    """LiteLLM rows in one hour, workload and model, spelling Bedrock two ways in turn: even
    rows "bedrock" logging $0.002, odd rows "AWS_Bedrock" logging $0.003 (no price card used)."""
    spellings = [("bedrock", MODEL, "0.002"), ("AWS_Bedrock", MODEL, "0.003")]
    return litellm_csv(rows, spellings, group=MODEL)


def _otel(provider: str) -> bytes:
    return otel_span(provider=provider, model=MODEL)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("bedrock", "aws-bedrock"),
        ("aws.bedrock", "aws-bedrock"),
        ("AWS_Bedrock", "aws-bedrock"),
        (" aws bedrock ", "aws-bedrock"),
        ("aws-bedrock", "aws-bedrock"),  # the normal name is its own normal name
        ("vertex_ai", "gcp-vertex"),
        ("gcp.vertex_ai", "gcp-vertex"),
        ("azure", "azure-openai"),
        ("azure.ai.openai", "azure-openai"),
        ("together_ai", "together"),
        ("OpenAI", "openai"),
        ("vllm", "vllm"),  # unknown: kept, lower-cased
        ("My Provider", "my provider"),
        ("", ""),
    ],
)
def test_normalize_provider(raw: str, expected: str) -> None:
    assert normalize_provider(raw) == expected
    assert normalize_provider(expected) == expected  # idempotent


def test_every_alias_maps_to_a_normal_name() -> None:
    for alias, name in PROVIDER_ALIASES.items():
        assert normalize_provider(alias) == name
        assert normalize_provider(name) == name


def test_bill_lines_use_the_normaliser_plus_service_rules() -> None:
    assert usage_provider(provider="aws", service="Amazon Bedrock") == "aws-bedrock"
    assert usage_provider(provider="gcp", service="Vertex AI") == "gcp-vertex"
    assert usage_provider(provider="azure", service="Foundry Models") == "azure-openai"
    assert usage_provider(provider="openai", service=None) == "openai"
    assert usage_provider(provider="aws", service="Amazon EC2") == "aws"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("AWS", "aws"),
        ("Amazon Web Services, Inc.", "aws"),
        ("Microsoft", "azure"),
        ("Google Cloud", "gcp"),
        ("Oracle", "oracle"),
        ("Oracle Cloud Infrastructure", "oracle"),
        ("Anthropic", "anthropic"),
        ("Acme GPU Cloud", "acme-gpu-cloud"),
    ],
)
def test_billing_provider(raw: str, expected: str) -> None:
    assert billing_provider(raw) == expected


def _ingest(content: bytes, name: str) -> Upload:
    upload = upload_create(source=io.BytesIO(content), original_name=name, enqueue=False)
    return upload_ingest(upload_id=upload.pk)


@pytest.mark.django_db
@pytest.mark.parametrize(("rows", "columnar"), [(600, True), (2, False)])
def test_litellm_bedrock_and_otel_aws_bedrock_land_under_one_provider(
    rows: int, columnar: bool
) -> None:
    content = _litellm(rows)
    chunks = list(read_requests(io.BytesIO(content)))
    assert all((c.frame is not None) is columnar for c in chunks)

    litellm = _ingest(content, "spend.csv")
    otel = _ingest(_otel("aws.bedrock"), "traces.json")
    assert (litellm.status, otel.status) == ("succeeded", "succeeded")
    assert (litellm.format, otel.format) == ("litellm", "otel")

    # Both LiteLLM spellings share one rollup key: one hourly row with every request.
    [litellm_row] = HourlyRollup.objects.filter(upload=litellm)
    assert (litellm_row.provider, litellm_row.requests) == ("aws-bedrock", rows)
    # rows / 2 x $0.002 + rows / 2 x $0.003 = rows x $0.0025
    assert litellm_row.logged_cost_usd == Decimal("0.0025") * rows
    assert list(HourlyRollup.objects.filter(upload=otel).values_list("provider", flat=True)) == [
        "aws-bedrock"
    ]
    assert set(DailyRollup.objects.values_list("provider", flat=True)) == {"aws-bedrock"}
    assert filter_choices()["provider"] == ["aws-bedrock"]

    [row] = spend_breakdown(group_by="provider", filters=SpendFilters(start=DAY, end=DAY)).rows
    assert (row.key, row.requests) == ("aws-bedrock", rows + 1)


@pytest.mark.django_db
def test_the_provider_filter_accepts_an_alias(client: Client, finops_user: Any) -> None:
    assert parse_filters({"provider": "bedrock"}).provider == "aws-bedrock"
    assert parse_filters({"provider": " AWS.Bedrock "}).provider == "aws-bedrock"
    assert parse_filters({"provider": ""}).provider == ""
    _ingest(_otel("aws.bedrock"), "traces.json")
    _ingest(otel_span(provider="openai", model="gpt-4o"), "openai.json")
    client.force_login(finops_user)
    for alias in ("bedrock", "aws.bedrock", "aws-bedrock"):
        body = client.get(
            f"/api/v1/spend/?group_by=provider&start=2026-11-02&end=2026-11-02&provider={alias}"
        ).json()
        assert [(r["key"], r["requests"]) for r in body["results"]] == [("aws-bedrock", 1)], alias
    page = client.get("/?start=2026-11-02&end=2026-11-02&provider=bedrock")
    assert page.status_code == 200
    assert page.context["filters"].provider == "aws-bedrock"
    assert '<option value="aws-bedrock" selected>' in page.content.decode()
