"""The provider report document (`billing_exports.provider_reports`): written the same for the
same figures, read back with every field checked (the whole document refused naming the field),
its cost lines as billing lines, and its spend rows with costs shared to the billionth."""

from __future__ import annotations

import io
import json
from datetime import date
from decimal import Decimal

import pytest

from audit_app.ingestion.billing_exports import detect_billing_format, read_billing
from audit_app.ingestion.billing_exports.provider_reports import (
    DocCost,
    DocUsage,
    ReportDocument,
    day_figures,
    read_document,
    report_document,
    share_exactly,
    spend_rows,
)
from audit_app.ingestion.reading import ImportFileError

DAY = date(2026, 11, 2)


def _cost(line_item: str, amount: str, **fields: str) -> DocCost:
    values = {
        "day": DAY,
        "line_item": line_item,
        "model": line_item.partition(",")[0] if "," in line_item else "",
        "project_id": "proj_web",
        "project_name": "Web",
        "amount": Decimal(amount),
        "currency": "USD",
        "service_tier": "",
        "token_type": "",
        **fields,
    }
    return DocCost(**values)  # type: ignore[arg-type]


def _usage(key: str, *, inp: int, out: int, model: str = "gpt-4o-2024-08-06") -> DocUsage:
    return DocUsage(
        day=DAY,
        model=model,
        project_id="proj_web",
        api_key_id=key,
        batch=False,
        service_tier="",
        requests=1,
        input_tokens=inp,
        output_tokens=out,
        cached_input_tokens=0,
        cache_write_tokens=0,
    )


def _document(
    costs: list[DocCost], usage: list[DocUsage], over: dict[str, object] | None = None
) -> bytes:
    raw = report_document(
        provider="openai",
        account="openai-source-1",
        start=DAY,
        end=date(2026, 11, 3),
        costs=costs,
        usage=usage,
        follows=None,
    )
    parsed = json.loads(raw)
    parsed.update(over or {})
    return json.dumps(parsed).encode()


def _read(raw: bytes) -> ReportDocument:
    return read_document(io.BytesIO(raw), format="openai-costs-api")


def test_the_same_figures_make_the_same_bytes_in_any_order() -> None:
    a, b = _cost("gpt-4o, input", "1"), _cost("gpt-4o, output", "2")
    first = report_document(
        provider="openai", account="x", start=DAY, end=date(2026, 11, 3),
        costs=[a, b], usage=[], follows=None,
    )  # fmt: skip
    second = report_document(
        provider="openai", account="x", start=DAY, end=date(2026, 11, 3),
        costs=[b, a], usage=[], follows=None,
    )  # fmt: skip
    assert first == second
    assert day_figures(first) == day_figures(second)
    assert detect_billing_format(first[:200]) == "openai-costs-api"


def test_a_cost_split_over_keys_by_tokens_adds_up_exactly() -> None:
    # $1.00 over keys with 1, 1 and 1 tokens: 0.333333333 each and the last unit to the first.
    assert share_exactly(Decimal("1"), [1, 1, 1]) == [
        Decimal("0.333333334"),
        Decimal("0.333333333"),
        Decimal("0.333333333"),
    ]
    # $3.75 for gpt-4o over key_a (120,000 tokens) and key_b (40,000): 2.8125 and 0.9375.
    rows = spend_rows(
        _read(
            _document(
                [
                    _cost("gpt-4o-2024-08-06, input", "1.25"),
                    _cost("gpt-4o-2024-08-06, output", "2.50"),
                    _cost("web search tool calls", "0.10"),
                ],
                [
                    _usage("key_a", inp=100_000, out=20_000),
                    _usage("key_b", inp=30_000, out=10_000),
                    _usage("key_a", inp=10, out=1, model="my-model-x"),
                ],
            )  # fmt: skip
        )
    )
    by_key = {(r.model, r.api_key_id): r.cost_usd for r in rows}
    assert by_key == {
        ("gpt-4o-2024-08-06", "key_a"): Decimal("2.8125"),
        ("gpt-4o-2024-08-06", "key_b"): Decimal("0.9375"),
        ("my-model-x", "key_a"): None,  # no cost line: priced from cards, or unpriced
        ("web search tool calls", ""): Decimal("0.10"),  # a cost no usage line has
    }
    assert {r.project_name for r in rows} == {"Web"}


def test_cost_lines_become_billing_lines_of_their_day() -> None:
    raw = _document(
        [_cost("gpt-4o-2024-08-06, cached input", "0.05"), _cost("web search tool calls", "0.1")],
        [],
    )
    lines = [line for chunk in read_billing(io.BytesIO(raw)) for line in chunk.lines]
    cached, search = lines
    assert (cached.meter.kind, cached.meter.model, cached.meter.token_class) == (
        "token",
        "gpt-4o-2024-08-06",
        "cache-read",
    )
    assert (search.meter.kind, search.sku) == ("other", "web search tool calls")
    assert cached.billing_account == "openai-source-1" and cached.account_id == "proj_web"
    assert (cached.billing_period_start.date(), cached.billing_period_end.date()) == (
        DAY,
        date(2026, 11, 3),
    )
    assert (cached.billed_cost, cached.effective_cost) == (Decimal("0.05"), Decimal("0.05"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"costs": [{"day": "2026-11-02", "line_item": "x", "amount": "abc",
                     "currency": "USD"}]}, "`costs[0].amount` is not a number: 'abc'"),
        ({"costs": [{"day": "2026-11-09", "line_item": "x", "amount": "1",
                     "currency": "USD"}]}, "`costs[0].day` (2026-11-09) is outside"),
        ({"usage": [{"day": "2026-11-02", "model": "m", "input_tokens": -1}]},
         "`usage[0].input_tokens` must be a whole number from 0, not '-1'"),
        ({"usage": [{"day": "2026-11-02", "model": ""}]}, "`usage[0].model` is empty"),
        ({"format": "anthropic-costs-api"}, "`format` is 'anthropic-costs-api'"),
        ({"costs": "nope"}, "`costs` must be a list"),
    ],
)  # fmt: skip
def test_a_bad_field_refuses_the_whole_document_naming_it(
    change: dict[str, object], message: str
) -> None:
    with pytest.raises(ImportFileError) as refused:
        _read(_document([], [], change))
    assert message in str(refused.value)
