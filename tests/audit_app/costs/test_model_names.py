"""One model id per provider everywhere: the rule, ingest (row-by-row and columnar paths, and a
real LiteLLM OTel capture), spend by model, the filter choices, the URL filter and budgets."""

from __future__ import annotations

import io
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.db.models import Sum
from django.test import Client

from audit_app.budgets.services import budget_create
from audit_app.costs.billing import pool_rollups, pooled_models, reconciliation
from audit_app.costs.model_names import canonical_model, canonical_pair, served_names
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.token_logs import read_requests
from audit_app.ingestion.uploads import upload_create
from audit_app.models import DailyRollup, HourlyRollup, ServingPool, Upload
from audit_app.reporting.filters import SpendFilters, parse_filters
from audit_app.reporting.selectors import filter_choices
from audit_app.reporting.spend import spend_breakdown
from tests.support.paths import FIXTURES_DIR
from tests.support.spelled_logs import litellm_csv, otel_span

DAY = date(2026, 11, 2)
LITELLM_OTEL = FIXTURES_DIR / "real" / "otel" / "litellm-1.106.12_proxy_callbacks-otel.jsonl"


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        ("openai", "openai/gpt-4o", ("openai", "gpt-4o")),
        ("openai", "gpt-4o", ("openai", "gpt-4o")),
        ("OpenAI", " openai/gpt-4o ", ("openai", "gpt-4o")),
        ("", "openai/gpt-4o", ("openai", "gpt-4o")),  # the prefix names the provider
        (
            "anthropic",
            "anthropic/claude-3-5-sonnet-20241022",
            ("anthropic", "claude-3-5-sonnet-20241022"),
        ),
        (
            "bedrock",
            "bedrock/us.anthropic.claude-haiku-4-5",
            ("aws-bedrock", "us.anthropic.claude-haiku-4-5"),
        ),
        ("azure", "azure/my-gpt4o-deployment", ("azure-openai", "my-gpt4o-deployment")),
        ("vertex_ai", "gemini/gemini-2.5-pro", ("gcp-vertex", "gemini-2.5-pro")),
        # A prefix naming another provider is part of the name there (a Hugging Face id).
        ("vllm", "openai/gpt-oss-120b", ("vllm", "openai/gpt-oss-120b")),
        (
            "vllm",
            "meta-llama/Llama-3.3-70B-Instruct",
            ("vllm", "meta-llama/Llama-3.3-70B-Instruct"),
        ),
        ("", "meta-llama/Llama-3.3-70B-Instruct", ("", "meta-llama/Llama-3.3-70B-Instruct")),
        # Case and Bedrock inference profiles are kept: they are priced apart.
        (
            "aws-bedrock",
            "global.anthropic.claude-haiku-4-5",
            ("aws-bedrock", "global.anthropic.claude-haiku-4-5"),
        ),
        ("openai", "GPT-4o", ("openai", "GPT-4o")),
        ("openai", "openai/", ("openai", "openai/")),  # nothing after the prefix: kept
        ("", "", ("", "")),
    ],
)
def test_canonical_pair(provider: str, model: str, expected: tuple[str, str]) -> None:
    assert canonical_pair(provider, model) == expected
    assert canonical_pair(*expected) == expected  # idempotent
    assert canonical_model(model, provider) == expected[1]


def _litellm(rows: int) -> bytes:
    """LiteLLM rows in one hour and workload, spelling gpt-4o two ways in turn: even rows
    "openai/gpt-4o" logging $0.002, odd rows "gpt-4o" logging $0.003."""
    spellings = [("openai", "openai/gpt-4o", "0.002"), ("openai", "gpt-4o", "0.003")]
    return litellm_csv(rows, spellings, group="gpt-4o")


def _otel(model: str) -> bytes:
    return otel_span(provider="openai", model=model)


def _ingest(content: bytes, name: str) -> Upload:
    upload = upload_create(source=io.BytesIO(content), original_name=name, enqueue=False)
    return upload_ingest(upload_id=upload.pk)


@pytest.mark.django_db
@pytest.mark.parametrize(("rows", "columnar"), [(600, True), (2, False)])
def test_litellm_routed_names_and_otel_names_land_as_one_model(rows: int, columnar: bool) -> None:
    content = _litellm(rows)
    chunks = list(read_requests(io.BytesIO(content)))
    assert all((c.frame is not None) is columnar for c in chunks)

    litellm = _ingest(content, "spend.csv")
    otel = _ingest(_otel("gpt-4o"), "traces.json")
    assert (litellm.status, otel.status) == ("succeeded", "succeeded")
    assert (litellm.format, otel.format) == ("litellm", "otel")

    # Both LiteLLM spellings share one rollup key: one hourly row with every request.
    [row] = HourlyRollup.objects.filter(upload=litellm)
    assert (row.provider, row.model, row.requests) == ("openai", "gpt-4o", rows)
    # rows / 2 x $0.002 + rows / 2 x $0.003 = rows x $0.0025
    assert row.logged_cost_usd == Decimal("0.0025") * rows
    assert set(DailyRollup.objects.values_list("provider", "model")) == {("openai", "gpt-4o")}
    assert filter_choices()["model"] == ["gpt-4o"]

    [spend] = spend_breakdown(group_by="model", filters=SpendFilters(start=DAY, end=DAY)).rows
    assert (spend.key, spend.requests) == ("gpt-4o", rows + 1)


@pytest.mark.django_db
def test_a_litellm_otel_capture_stores_the_deployment_models_canonically() -> None:
    upload = _ingest(LITELLM_OTEL.read_bytes(), LITELLM_OTEL.name)
    assert upload.status == "succeeded"
    # The spans' litellm.provider.model is "openai/gpt-4o" (4 calls, 1 "openai/gpt-4o-mini")
    # and "anthropic/claude-3-5-sonnet-20241022" (tests/audit_app/ingestion/token_logs/
    # test_otel_real.py reads them span by span).
    rows = HourlyRollup.objects.filter(upload=upload).values("provider", "model")
    stored = {(r["provider"], r["model"]): r["n"] for r in rows.annotate(n=Sum("requests"))}
    assert stored == {
        ("openai", "gpt-4o"): 4,
        ("openai", "gpt-4o-mini"): 1,
        ("anthropic", "claude-3-5-sonnet-20241022"): 2,
    }


@pytest.mark.django_db
def test_the_model_filter_and_model_budgets_accept_a_routed_name(
    client: Client, finops_user: Any
) -> None:
    assert parse_filters({"model": "openai/gpt-4o"}).model == "gpt-4o"
    assert parse_filters({"model": "openai/gpt-4o"}).provider == ""  # no provider filter added
    assert parse_filters({"provider": "openai", "model": "openai/gpt-4o"}).model == "gpt-4o"
    assert parse_filters({"provider": "vllm", "model": "openai/gpt-oss-120b"}).model == (
        "openai/gpt-oss-120b"
    )
    _ingest(_litellm(2), "spend.csv")
    _ingest(_otel("gpt-4o-mini"), "mini.json")
    client.force_login(finops_user)
    for name in ("gpt-4o", "openai/gpt-4o"):
        body = client.get(
            f"/api/v1/spend/?group_by=model&start=2026-11-02&end=2026-11-02&model={name}"
        ).json()
        assert [(r["key"], r["requests"]) for r in body["results"]] == [("gpt-4o", 2)], name
    page = client.get("/?start=2026-11-02&end=2026-11-02&model=openai/gpt-4o")
    assert page.status_code == 200
    assert page.context["filters"].model == "gpt-4o"
    assert '<option value="gpt-4o" selected>' in page.content.decode()

    budget = budget_create(
        user=None,
        data={
            "name": "gpt-4o",
            "scope": {"kind": "model", "value": "openai/gpt-4o"},
            "amount_usd": "25",
            "on_forecast": False,
        },
    )
    assert (budget.scope_kind, budget.scope_value) == ("model", "gpt-4o")


@pytest.mark.django_db
def test_a_pool_serving_a_routed_name_finds_its_canonical_rollups() -> None:
    # LiteLLM names a vLLM server behind its OpenAI-compatible route "openai/<HF id>"; the
    # rollups store the HF id under openai, and the pool listing the routed name still owns it.
    content = _litellm(2).replace(b"openai/gpt-4o", b"openai/meta-llama/Llama-3.1-8B")
    content = content.replace(b",gpt-4o,gpt-4o,", b",openai/meta-llama/Llama-3.1-8B,gpt-4o,")
    _ingest(content, "spend.csv")
    assert set(HourlyRollup.objects.values_list("provider", "model")) == {
        ("openai", "meta-llama/Llama-3.1-8B")
    }
    pool = ServingPool.objects.create(
        name="vllm-a", models_served=["openai/meta-llama/Llama-3.1-8B"]
    )
    assert served_names(pool.models_served) == [
        "openai/meta-llama/Llama-3.1-8B",
        "meta-llama/Llama-3.1-8B",
    ]
    assert pooled_models()["meta-llama/Llama-3.1-8B"] == "vllm-a"
    owned = pool_rollups(pool, HourlyRollup.objects.all())
    assert sum(owned.values_list("requests", flat=True)) == 2


@pytest.mark.django_db
def test_reconciliation_shows_the_stored_model_ids() -> None:
    # Matching ignores case (bill meters and logs spell models differently); the row shows the
    # id the spend pages and the filter use, case and all.
    fine_tuned = "ft:gpt-4.1-mini-2025-04-14:acme-corp:ticket-triage:B7xk2Lq9"
    _ingest(_litellm(2), "spend.csv")
    _ingest(litellm_csv(1, [("openai", f"openai/{fine_tuned}", "0.01")], group="ft"), "ft.csv")
    rows = reconciliation(start=DAY, end=DAY)
    assert sorted((r.provider, r.model, r.log_requests) for r in rows) == [
        ("openai", fine_tuned, 1),
        ("openai", "gpt-4o", 2),
    ]
    assert set(filter_choices()["model"]) == {fine_tuned, "gpt-4o"}
