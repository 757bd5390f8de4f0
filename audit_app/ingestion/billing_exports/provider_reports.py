"""Provider cost and usage reports as a billing upload: the stored document, its lines, its spend.

An `openai` or `anthropic` billing source (`audit_app.ingestion.provider_sources`) writes each
poll's report as one JSON document (`report_document`), uploaded in the format
`openai-costs-api` or `anthropic-costs-api`. Reading it back (`read_document`) checks every
field and refuses the whole document naming the first field at fault, so nothing lands half.
Its cost lines become billing lines (`billing_lines`); its cost and usage together become the
report's spend rows (`spend_rows`), which stand in for token logs where none cover a day.

Its rules in full: `docs/formats.md`, section "Provider cost and usage reports", and
`docs/methods.md`, section "Provider cost and usage reports".

One concern, the stored document: writing it, reading it back, and what its lines mean as
charges and spend. Pure: no Django.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any, BinaryIO, Protocol

from audit_app.costs.model_names import canonical_model
from audit_app.ingestion.billing_exports.base import MAX_ABS_AMOUNT, BillingChunk, BillingLine
from audit_app.ingestion.billing_exports.meters import KIND_OTHER, KIND_TOKEN, TIERS, ParsedMeter
from audit_app.ingestion.reading import ImportFileError, quoted, unstorable_reason

VERSION = 1
FORMAT_OF = {"openai": "openai-costs-api", "anthropic": "anthropic-costs-api"}
PROVIDER_OF = {name: provider for provider, name in FORMAT_OF.items()}
PROVIDER_LABELS = {"openai": "OpenAI", "anthropic": "Anthropic"}
# Charges keep 12 decimals (`BillingCharge.billed_cost`), rollups 9 (`logged_cost_usd`).
CHARGE_PLACES = Decimal("1e-12")
SPEND_PLACES = Decimal("1e-9")
MAX_TEXT = 500
ONE_DAY = timedelta(days=1)
_FORMAT_KEY = re.compile(r'"format"\s*:\s*"([a-z-]+)"')

# OpenAI line items end in the token class ("gpt-4o-2024-08-06, cached input"); Anthropic
# results give a token_type.
_TOKEN_CLASS_WORDS = (
    ("cached input", "cache-read"),
    ("cache read", "cache-read"),
    ("cache_read", "cache-read"),
    ("cache write", "cache-write"),
    ("cache_creation", "cache-write"),
    ("input", "input"),
    ("output", "output"),
)


class CostLike(Protocol):
    """A cost line as a reader gives it (`provider_apis.CostLine`)."""

    @property
    def day(self) -> date: ...

    @property
    def line_item(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def project_id(self) -> str: ...

    @property
    def project_name(self) -> str: ...

    @property
    def amount(self) -> Decimal: ...

    @property
    def currency(self) -> str: ...

    @property
    def service_tier(self) -> str: ...

    @property
    def token_type(self) -> str: ...


class UsageLike(Protocol):
    """A usage line as a reader gives it (`provider_apis.UsageLine`)."""

    @property
    def day(self) -> date: ...

    @property
    def model(self) -> str: ...

    @property
    def project_id(self) -> str: ...

    @property
    def api_key_id(self) -> str: ...

    @property
    def batch(self) -> bool | None: ...

    @property
    def service_tier(self) -> str: ...

    @property
    def requests(self) -> int: ...

    @property
    def input_tokens(self) -> int: ...

    @property
    def output_tokens(self) -> int: ...

    @property
    def cached_input_tokens(self) -> int: ...

    @property
    def cache_write_tokens(self) -> int: ...


@dataclass(frozen=True, kw_only=True)
class DocCost:
    day: date
    line_item: str
    model: str
    project_id: str
    project_name: str
    amount: Decimal
    currency: str
    service_tier: str
    token_type: str


@dataclass(frozen=True, kw_only=True)
class DocUsage:
    day: date
    model: str
    project_id: str
    api_key_id: str
    batch: bool
    service_tier: str
    requests: int
    input_tokens: int  # uncached input
    output_tokens: int
    cached_input_tokens: int
    cache_write_tokens: int

    @property
    def tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cached_input_tokens
            + self.cache_write_tokens
        )


@dataclass(frozen=True, kw_only=True)
class ReportDocument:
    """One poll's report as stored: the provider's figures for the days start..end
    (end exclusive), under the billing account that keys its restatements."""

    format: str
    provider: str
    account: str
    start: date
    end: date
    costs: tuple[DocCost, ...]
    usage: tuple[DocUsage, ...]

    @property
    def days(self) -> list[date]:
        return [self.start + timedelta(days=n) for n in range((self.end - self.start).days)]


@dataclass(frozen=True, kw_only=True)
class SpendRow:
    """A day's usage of one model, project, key and tier, with the report's cost matched to it
    (`cost_usd` None: no cost line matched, price it from cards); a cost line that no usage
    matched is a row with no tokens."""

    day: date
    model: str
    project_id: str
    project_name: str
    api_key_id: str
    batch: bool
    service_tier: str
    requests: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cache_write_tokens: int
    cost_usd: Decimal | None


# --- Writing -------------------------------------------------------------------------------


def report_document(
    *,
    provider: str,
    account: str,
    start: date,
    end: date,
    costs: Iterable[CostLike],
    usage: Iterable[UsageLike],
    follows: int | None,
) -> bytes:
    """The document of one report, deterministic for the same figures: lines sorted, no time
    of polling. ``follows`` names the upload of the source's previous report (so a report
    that changes back to earlier figures is still a new document)."""
    cost_rows = sorted(
        (
            {
                "day": line.day.isoformat(),
                "line_item": line.line_item,
                "model": line.model,
                "project_id": line.project_id,
                "project_name": line.project_name,
                "amount": _decimal_text(line.amount),
                "currency": line.currency,
                "service_tier": line.service_tier,
                "token_type": line.token_type,
            }
            for line in costs
        ),
        key=lambda row: json.dumps(row, sort_keys=True),
    )
    usage_rows = sorted(
        (
            {
                "day": line.day.isoformat(),
                "model": line.model,
                "project_id": line.project_id,
                "api_key_id": line.api_key_id,
                "batch": bool(line.batch),
                "service_tier": line.service_tier,
                "requests": line.requests,
                "input_tokens": line.input_tokens,
                "output_tokens": line.output_tokens,
                "cached_input_tokens": line.cached_input_tokens,
                "cache_write_tokens": line.cache_write_tokens,
            }
            for line in usage
        ),
        key=lambda row: json.dumps(row, sort_keys=True),
    )
    document = {
        "format": FORMAT_OF[provider],
        "version": VERSION,
        "provider": provider,
        "account": account,
        "start": start.isoformat(),
        "end": end.isoformat(),
        "follows": follows,
        "costs": cost_rows,
        "usage": usage_rows,
    }
    # Keys in the order above, so the format is in the first bytes (`sniff_head`).
    return json.dumps(document, indent=1).encode("utf-8")


def day_figures(document: bytes) -> dict[str, str]:
    """A fingerprint (sha256) of each day's figures in the document, every day of its window
    included: what two polls compare to tell whether the provider changed a day."""
    parsed = json.loads(document)
    start, end = date.fromisoformat(parsed["start"]), date.fromisoformat(parsed["end"])
    days: dict[str, list[Any]] = {
        (start + timedelta(days=n)).isoformat(): [] for n in range((end - start).days)
    }
    for key in ("costs", "usage"):
        for row in parsed[key]:
            days[row["day"]].append([key, row])
    return {
        day: hashlib.sha256(json.dumps(rows, sort_keys=True).encode("utf-8")).hexdigest()
        for day, rows in days.items()
    }


def _decimal_text(amount: Decimal) -> str:
    return "0" if amount == 0 else format(amount.normalize(), "f")


# --- Reading -------------------------------------------------------------------------------


def sniff_head(head: bytes) -> str | None:
    """The report format a document's first bytes name, or None."""
    text = head.lstrip()[:1024].decode("utf-8", "ignore")
    if not text.startswith("{"):
        return None
    found = _FORMAT_KEY.search(text)
    return found[1] if found and found[1] in PROVIDER_OF else None


def read_document(stream: BinaryIO, *, format: str) -> ReportDocument:
    """The document, every field checked; ImportFileError naming the first one at fault."""
    raw = stream.read()
    try:
        parsed = json.loads(raw, parse_float=Decimal)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ImportFileError(f"the report is not a JSON document ({exc})") from None
    if not isinstance(parsed, dict):
        raise ImportFileError("the report is not a JSON object")
    found = parsed.get("format")
    if found != format:
        raise ImportFileError(f"`format` is {quoted(found)}, not {format!r}")
    if parsed.get("version") != VERSION:
        raise ImportFileError(f"`version` is {quoted(parsed.get('version'))}, not {VERSION}")
    provider = PROVIDER_OF[format]
    if parsed.get("provider") != provider:
        raise ImportFileError(f"`provider` is {quoted(parsed.get('provider'))}, not {provider!r}")
    start = _date(parsed, "start", "start")
    end = _date(parsed, "end", "end")
    if end <= start:
        raise ImportFileError(f"`end` ({end}) is not after `start` ({start})")
    account = _text(parsed, "account", "account")
    costs = tuple(
        _cost(item, f"costs[{n}]", start, end) for n, item in enumerate(_list(parsed, "costs"))
    )
    usage = tuple(
        _usage(item, f"usage[{n}]", start, end) for n, item in enumerate(_list(parsed, "usage"))
    )
    return ReportDocument(
        format=format,
        provider=provider,
        account=account,
        start=start,
        end=end,
        costs=costs,
        usage=usage,
    )


def _list(parsed: Mapping[str, Any], key: str) -> list[Any]:
    value = parsed.get(key)
    if not isinstance(value, list):
        raise ImportFileError(f"`{key}` must be a list, not {quoted(value)}")
    return value


def _object(item: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(item, dict):
        raise ImportFileError(f"`{where}` must be an object, not {quoted(item)}")
    return item


def _text(item: Mapping[str, Any], key: str, where: str) -> str:
    value = item.get(key, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ImportFileError(f"`{where}` must be text, not {quoted(value)}")
    reason = unstorable_reason(value)
    if reason is not None:
        raise ImportFileError(f"`{where}` {reason}")
    if len(value) > MAX_TEXT:
        raise ImportFileError(f"`{where}` is {len(value)} characters long; at most {MAX_TEXT}")
    return value.strip()


def _date(item: Mapping[str, Any], key: str, where: str) -> date:
    value = item.get(key)
    try:
        return date.fromisoformat(value) if isinstance(value, str) else _no_date()
    except ValueError:
        raise ImportFileError(f"`{where}` is not a date (YYYY-MM-DD): {quoted(value)}") from None


def _no_date() -> date:
    raise ValueError("not text")


def _day(item: Mapping[str, Any], where: str, start: date, end: date) -> date:
    day = _date(item, "day", f"{where}.day")
    if not start <= day < end:
        raise ImportFileError(f"`{where}.day` ({day}) is outside the report's days {start}..{end}")
    return day


def _count(item: Mapping[str, Any], key: str, where: str) -> int:
    value = item.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ImportFileError(f"`{where}.{key}` must be a whole number from 0, not {quoted(value)}")
    return value


def _amount(item: Mapping[str, Any], where: str) -> Decimal:
    value = item.get("amount")
    try:
        if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
            raise InvalidOperation
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise ImportFileError(f"`{where}.amount` is not a number: {quoted(value)}") from None
    if not amount.is_finite() or abs(amount) > MAX_ABS_AMOUNT:
        raise ImportFileError(f"`{where}.amount` is not a finite amount: {quoted(value)}")
    return amount.quantize(CHARGE_PLACES, rounding=ROUND_HALF_EVEN)


def _cost(item: Any, where: str, start: date, end: date) -> DocCost:
    fields = _object(item, where)
    currency = _text(fields, "currency", f"{where}.currency").upper()
    if len(currency) != 3 or not currency.isalpha():
        raise ImportFileError(
            f"`{where}.currency` must be a 3-letter ISO code, not {quoted(fields.get('currency'))}"
        )
    line_item = _text(fields, "line_item", f"{where}.line_item")
    model = _text(fields, "model", f"{where}.model")
    if not line_item and not model:
        raise ImportFileError(f"`{where}` names neither a line item nor a model")
    return DocCost(
        day=_day(fields, where, start, end),
        line_item=line_item,
        model=model,
        project_id=_text(fields, "project_id", f"{where}.project_id"),
        project_name=_text(fields, "project_name", f"{where}.project_name"),
        amount=_amount(fields, where),
        currency=currency,
        service_tier=_text(fields, "service_tier", f"{where}.service_tier"),
        token_type=_text(fields, "token_type", f"{where}.token_type"),
    )


def _usage(item: Any, where: str, start: date, end: date) -> DocUsage:
    fields = _object(item, where)
    batch = fields.get("batch", False)
    if not isinstance(batch, bool):
        raise ImportFileError(f"`{where}.batch` must be true or false, not {quoted(batch)}")
    model = _text(fields, "model", f"{where}.model")
    if not model:
        raise ImportFileError(f"`{where}.model` is empty")
    return DocUsage(
        day=_day(fields, where, start, end),
        model=model,
        project_id=_text(fields, "project_id", f"{where}.project_id"),
        api_key_id=_text(fields, "api_key_id", f"{where}.api_key_id"),
        batch=batch,
        service_tier=_text(fields, "service_tier", f"{where}.service_tier"),
        **{
            key: _count(fields, key, where)
            for key in (
                "requests",
                "input_tokens",
                "output_tokens",
                "cached_input_tokens",
                "cache_write_tokens",
            )
        },
    )


# --- Billing lines -------------------------------------------------------------------------


def token_class(cost: DocCost) -> str:
    """input, output, cache-read or cache-write, from the token type or the line item's end."""
    text = (cost.token_type or cost.line_item).lower()
    for word, token in _TOKEN_CLASS_WORDS:
        if word in text:
            return token
    return ""


def billing_lines(document: ReportDocument) -> list[BillingLine]:
    """One billing line per cost line, billed and effective cost both its amount, billed on its
    UTC day under the document's account (so a later report of the day restates it)."""
    label = PROVIDER_LABELS[document.provider]
    lines = []
    for number, cost in enumerate(document.costs, start=1):
        start = datetime(cost.day.year, cost.day.month, cost.day.day, tzinfo=UTC)
        model = canonical_model(cost.model, document.provider)
        tier = cost.service_tier.lower()
        lines.append(
            BillingLine(
                line=number,
                provider=document.provider,
                provider_raw=label,
                service=f"{label} API",
                charge_category="Usage",
                charge_class="",
                period_start=start,
                period_end=start + ONE_DAY,
                billed_cost=cost.amount,
                effective_cost=cost.amount,
                currency=cost.currency,
                quantity=None,
                unit="",
                resource_id=cost.project_id,
                region="",
                account_id=cost.project_id,
                sku=cost.line_item or cost.model,
                meter=ParsedMeter(
                    kind=KIND_TOKEN if model else KIND_OTHER,
                    model=model,
                    token_class=token_class(cost) if model else "",
                    tier=tier if tier in TIERS else "",
                    raw=cost.line_item,
                ),
                tags={"project_name": cost.project_name} if cost.project_name else {},
                description=cost.project_name or cost.line_item,
                billing_period_start=start,
                billing_period_end=start + ONE_DAY,
                billing_account=document.account,
            )
        )
    return lines


def read_chunks(stream: BinaryIO, *, format: str) -> Iterator[BillingChunk]:
    """The document's cost lines as one chunk, as every billing importer yields them; its rows
    read are its cost and usage lines (the usage lands with the charges, `provider_usage`)."""
    stream.seek(0, 2)
    size = stream.tell()
    stream.seek(0)
    document = read_document(stream, format=format)
    lines = billing_lines(document)
    rows = len(lines) + len(document.usage)
    yield BillingChunk(lines=lines, rejects=[], rows_read=rows, bytes_read=size)


@dataclass(kw_only=True)
class ReportImporter:
    """The billing importer of one provider's report format (`importer_of` makes one per
    provider for `BILLING_IMPORTERS`): a JSON document, recognised by its first bytes, never by
    columns. Its attribute names are the importer protocol's."""

    NAME: str
    SHORT_LABEL: str
    LABEL: str
    DESCRIPTION: str

    def sniff_columns(self, columns: frozenset[str]) -> bool:
        return False

    def sniff(self, head: bytes) -> bool:
        return sniff_head(head) == self.NAME

    def read(self, stream: BinaryIO, *, chunk_rows: int) -> Iterator[BillingChunk]:
        return read_chunks(stream, format=self.NAME)


def importer_of(provider: str) -> ReportImporter:
    label = PROVIDER_LABELS[provider]
    return ReportImporter(
        NAME=FORMAT_OF[provider],
        SHORT_LABEL=f"{label} cost report",
        LABEL=f"{label} cost and usage report (polled by an {provider} source)",
        DESCRIPTION=f"an {label} cost and usage report",
    )


IMPORTERS = {FORMAT_OF[provider]: importer_of(provider) for provider in FORMAT_OF}


# --- Spend ---------------------------------------------------------------------------------


_MatchKey = tuple[date, str, str]  # day, project id, model (canonical_model's)


def spend_rows(document: ReportDocument) -> list[SpendRow]:
    """The report's spend: each usage line with the USD cost of its day, project and model
    shared over that group's lines by their tokens (to the billionth of a dollar, adding up
    exactly); each such cost no usage line has, as a row of its own (its model, else its line
    item). Costs in another currency are not spend (the bills keep them)."""
    names: dict[str, str] = {}
    costs: dict[_MatchKey, Decimal] = defaultdict(Decimal)
    for cost in document.costs:
        if cost.project_name:
            names.setdefault(cost.project_id, cost.project_name)
        if cost.currency == "USD":
            model = canonical_model(cost.model, document.provider) or cost.line_item
            costs[(cost.day, cost.project_id, model)] += cost.amount
    groups: dict[_MatchKey, list[DocUsage]] = defaultdict(list)
    for usage in document.usage:
        model = canonical_model(usage.model, document.provider)
        groups[(usage.day, usage.project_id, model)].append(usage)
    rows: list[SpendRow] = []
    for key, members in groups.items():
        day, project, model = key
        shares = (
            share_exactly(costs[key], [m.tokens for m in members])
            if key in costs
            else [None] * len(members)
        )
        rows.extend(
            SpendRow(
                day=day,
                model=model,
                project_id=project,
                project_name=names.get(project, ""),
                api_key_id=m.api_key_id,
                batch=m.batch,
                service_tier=m.service_tier,
                requests=m.requests,
                input_tokens=m.input_tokens,
                output_tokens=m.output_tokens,
                cached_input_tokens=m.cached_input_tokens,
                cache_write_tokens=m.cache_write_tokens,
                cost_usd=share,
            )
            for m, share in zip(members, shares, strict=True)
        )
    for key, amount in costs.items():
        if key in groups:
            continue
        day, project, model = key
        rows.append(
            SpendRow(
                day=day,
                model=model,
                project_id=project,
                project_name=names.get(project, ""),
                api_key_id="",
                batch=False,
                service_tier="",
                requests=0,
                input_tokens=0,
                output_tokens=0,
                cached_input_tokens=0,
                cache_write_tokens=0,
                cost_usd=amount.quantize(SPEND_PLACES, rounding=ROUND_HALF_EVEN),
            )
        )
    return sorted(rows, key=lambda r: (r.day, r.project_id, r.model, r.api_key_id, r.batch))


def share_exactly(amount: Decimal, weights: Sequence[int]) -> list[Decimal]:
    """``amount`` (rounded to SPEND_PLACES) split by ``weights`` (evenly when they are all 0)
    so the shares add up to it exactly: each share floored, the units left over handed to the
    largest remainders (ties to the earlier weight)."""
    total = amount.quantize(SPEND_PLACES, rounding=ROUND_HALF_EVEN)
    if not weights:
        return []
    weights = list(weights) if any(weights) else [1] * len(weights)
    whole = sum(weights)
    exact = [total * weight / whole for weight in weights]
    floored = [share.quantize(SPEND_PLACES, rounding=ROUND_FLOOR) for share in exact]
    missing = int((total - sum(floored, Decimal(0))) / SPEND_PLACES)
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i] - floored[i]), i))
    for index in order[:missing]:
        floored[index] += SPEND_PLACES
    return floored
