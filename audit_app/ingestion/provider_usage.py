"""Provider reports as spend: their usage rows, restated per day, and the one coverage rule.

A provider cost report (`billing_exports.provider_reports`) lands its costs as charges like any
bill, and its spend rows here (`ProviderUsage`). The newest report of a source's provider and
day counts (`usage_restate`); the others are kept, superseded.

Coverage (`report_usage_sync`, the one place that decides it): a (provider, UTC day) that a
token log or a live stream has rollups for is covered, and the logs attribute its spend; the
report's current rows for it then have no rollups. An uncovered (provider, day) has the
report's rows as rollups of the report's upload, so spend, budgets and anomalies see it. Every
landing of rollups (a file, a live micro-batch), every report landing and every deletion calls
it for the (provider, day)s it touched, inside its transaction, so no page ever reads both.

Its rules in full: `docs/methods.md`, section "Provider cost and usage reports".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

from django.db.models import Q

from audit_app.ingestion.billing_exports import provider_reports
from audit_app.ingestion.billing_exports.provider_reports import ReportDocument
from audit_app.ingestion.identity import resolve_workload
from audit_app.lib.bulk import insert_all
from audit_app.lib.results_cache import current_version
from audit_app.models import (
    BillingPeriodKey,
    DailyRollup,
    DataVersion,
    HourlyRollup,
    ProviderUsage,
    Upload,
    Workload,
)

ProviderDay = tuple[str, date]
REPORT = "report"  # the key of a report's window in its upload's `billing_totals`

if TYPE_CHECKING:  # numpy and pandas stay out of start-up (uploads import this module)
    from audit_app.ingestion.rollups import IngestAggregate


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def report_window(upload: Upload) -> dict[str, str] | None:
    """{"provider", "account", "start", "end"} of a landed report upload, else None."""
    found = (upload.billing_totals or {}).get(REPORT)
    return cast(dict[str, str], found) if isinstance(found, dict) else None


def window_days(window: dict[str, str]) -> list[ProviderDay]:
    """The (provider, day)s of a report's window."""
    start, end = date.fromisoformat(window["start"]), date.fromisoformat(window["end"])
    return [(window["provider"], start + timedelta(days=n)) for n in range((end - start).days)]


# --- Landing a report ----------------------------------------------------------------------


def report_usage_land(upload: Upload, document: ReportDocument) -> dict[str, str]:
    """Write the report's spend rows and make them the current ones for its days; the window
    to keep in the upload's `billing_totals` under REPORT. Inside the transaction that marks
    the upload succeeded (after `charges_supersede`); once it is saved succeeded,
    `report_usage_sync(window_days(window))`."""
    ProviderUsage.objects.filter(upload=upload).delete()
    rows = provider_reports.spend_rows(document)
    ProviderUsage.objects.bulk_create(
        [
            ProviderUsage(
                upload=upload,
                provider=document.provider,
                billing_account=document.account[:500],
                day=row.day,
                model=row.model[:200],
                project_id=row.project_id[:200],
                project_name=row.project_name[:200],
                api_key_id=row.api_key_id[:200],
                batch=row.batch,
                service_tier=row.service_tier[:32],
                requests=row.requests,
                input_tokens=row.input_tokens,
                output_tokens=row.output_tokens,
                cached_input_tokens=row.cached_input_tokens,
                cache_write_tokens=row.cache_write_tokens,
                cost_usd=row.cost_usd,
            )
            for row in rows
        ],
        batch_size=2000,
    )
    window = {
        "provider": document.provider,
        "account": document.account,
        "start": document.start.isoformat(),
        "end": document.end.isoformat(),
    }
    usage_restate(
        provider=document.provider, account=document.account, days=document.days, newest=upload
    )
    return window


def _lock_days(provider: str, account: str, days: list[date]) -> None:
    """Hold the days' restatement rows (`BillingPeriodKey`, as charges do) until the
    transaction ends, so two reports of one day land one after the other."""
    keys = [
        BillingPeriodKey(
            provider=provider,
            billing_account=account,
            billing_period_start=_midnight(day),
            amortized=False,
        )
        for day in days
    ]
    BillingPeriodKey.objects.bulk_create(keys, ignore_conflicts=True)
    list(
        BillingPeriodKey.objects.select_for_update()
        .filter(
            provider=provider,
            billing_account=account,
            amortized=False,
            billing_period_start__in=[key.billing_period_start for key in keys],
        )
        .order_by("pk")
    )


def usage_restate(
    *,
    provider: str,
    account: str,
    days: list[date],
    newest: Upload | None = None,
    leaving: Upload | None = None,
) -> None:
    """For each day, the rows of the newest landed report of (provider, account) whose days
    hold it count; every other report's rows of that day are superseded by it. ``newest`` is
    the report landing now (not marked succeeded yet); without it the newest is found among
    the reports but ``leaving`` (one being deleted), by when they landed."""
    if not days:
        return
    _lock_days(provider, account, days)
    reports = (
        []
        if newest is not None
        else [
            (upload, window)
            for upload in Upload.objects.filter(
                kind=Upload.Kind.BILLING, status=Upload.Status.SUCCEEDED
            ).filter(
                billing_totals__report__provider=provider, billing_totals__report__account=account
            )
            if (window := report_window(upload)) is not None and upload != leaving
        ]
    )
    reports.sort(key=lambda item: (item[0].finished_at or item[0].created_at, item[0].pk))
    for day in days:
        latest = newest
        if latest is None:
            covering = [u for u, w in reports if w["start"] <= day.isoformat() < w["end"]]
            latest = covering[-1] if covering else None
        rows = ProviderUsage.objects.filter(provider=provider, billing_account=account, day=day)
        if latest is None:
            rows.update(superseded_by=None)
            continue
        rows.filter(upload=latest).update(superseded_by=None)
        rows.exclude(upload=latest).update(superseded_by=latest)


def report_usage_release(upload: Upload) -> list[ProviderDay]:
    """Before a report upload is deleted: its days' rows go back to the newest report left.
    Returns the (provider, day)s to sync once it is gone. Inside the deleting transaction."""
    window = report_window(upload)
    if window is None:
        return []
    pairs = window_days(window)
    ProviderUsage.objects.filter(upload=upload).delete()
    usage_restate(
        provider=window["provider"],
        account=window["account"],
        days=[day for _, day in pairs],
        leaving=upload,
    )
    return pairs


# --- Coverage ------------------------------------------------------------------------------


def aggregate_days(aggregate: IngestAggregate) -> set[ProviderDay]:
    """The (provider, UTC day)s an aggregate of token-log rows holds."""
    return {(key.provider, key.hour.date()) for key in aggregate.rollups}


def upload_days(upload: Upload) -> set[ProviderDay]:
    """The (provider, UTC day)s an upload's rollups hold (before it is deleted)."""
    return set(
        DailyRollup.objects.filter(upload=upload)
        .values_list("provider", "day")
        .distinct()
        .order_by()
    )


def _logs_cover(provider: str, day: date) -> bool:
    return (
        DailyRollup.objects.filter(
            provider=provider, day=day, upload__status=Upload.Status.SUCCEEDED
        )
        .exclude(upload__kind=Upload.Kind.BILLING)
        .exists()
    )


def report_usage_sync(pairs: Iterable[ProviderDay]) -> None:
    """The one coverage rule, applied to the given (provider, day)s: the reports' rollups of
    each are removed, then written again from the current report rows where no token log
    covers it. Takes the data version row first, as every landing does, so landings that
    touch the same days run one after the other."""
    wanted = set(pairs)
    if not wanted or not ProviderUsage.objects.exists():
        return
    providers = {provider for provider, _ in wanted}
    days = {day for _, day in wanted}
    current_version()
    DataVersion.objects.select_for_update().filter(pk=1).first()
    reported = set(
        ProviderUsage.objects.filter(provider__in=providers, day__in=days)
        .values_list("provider", "day")
        .distinct()
        .order_by()
    )
    for provider, day in sorted(wanted & reported):
        _report_rollups(provider, day).delete()
        DailyRollup.objects.filter(
            provider=provider, day=day, upload__kind=Upload.Kind.BILLING
        ).delete()
        if not _logs_cover(provider, day):
            _materialize(provider, day)


def _report_rollups(provider: str, day: date) -> Any:
    start = _midnight(day)
    return HourlyRollup.objects.filter(
        provider=provider,
        hour__gte=start,
        hour__lt=start + timedelta(days=1),
        upload__kind=Upload.Kind.BILLING,
    )


def _materialize(provider: str, day: date) -> None:
    """The current report rows of (provider, day) as hourly (at midnight) and daily rollups
    of their uploads (`rollup_values`)."""
    from audit_app.ingestion.daily import daily_from_hourly  # numpy: not at start-up

    current = ProviderUsage.objects.filter(
        Q(superseded_by__isnull=True),
        provider=provider,
        day=day,
        upload__status=Upload.Status.SUCCEEDED,
    ).order_by("pk")
    sums: dict[tuple[Any, ...], dict[str, Any]] = {}
    for usage in current:
        values = rollup_values(usage)
        key = (usage.upload_id, *(values[f] for f in ("workload", "team", "model", "batch_api")))
        total = sums.get(key)
        if total is None:
            sums[key] = values
            continue
        for name, value in values.items():
            if name not in _KEY_VALUES:
                total[name] += value
    hourly = [
        {
            **values,
            "upload_id": key[0],
            "hour": _midnight(day),
            "provider": provider,
            "pool": "",
            "operation": "",
            "streaming_requests": 0,
            "errors": 0,
            "distinct_end_users": 0,
            "ttft_histogram": b"",
            "latency_histogram": b"",
            "tpot_histogram": b"",
        }
        for key, values in sums.items()
    ]
    insert_all(HourlyRollup, hourly)
    by_upload: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in hourly:
        by_upload[row["upload_id"]].append(row)
    for upload_id, rows in by_upload.items():
        insert_all(DailyRollup, ({**r, "upload_id": upload_id} for r in daily_from_hourly(rows)))
    names = sorted({values["workload"] for values in sums.values()})
    Workload.objects.bulk_create([Workload(name=name) for name in names], ignore_conflicts=True)


_KEY_VALUES = frozenset({"workload", "team", "model", "batch_api"})


def rollup_values(usage: ProviderUsage) -> dict[str, Any]:
    """One report row as a rollup's key and sums. The workload by the log rule
    (`identity.resolve_workload`): the project's (workspace's) name, else its id, as the
    `workload` metadata, then the API key as the caller, then unassigned/<model>; no team.
    With a matched cost the row is logged (its cost is the report's); without, its tokens are
    unlogged and priced from cards, counted as at least one request (Anthropic's usage has no
    request count) so the pricing sees them."""
    workload = resolve_workload(
        tags=(),
        metadata={"workload": usage.project_name or usage.project_id},
        caller=usage.api_key_id,
        team="",
        model=usage.model,
    )
    cached, written = usage.cached_input_tokens, usage.cache_write_tokens
    total_input = usage.input_tokens + cached + written
    tokens = total_input + usage.output_tokens
    logged = usage.cost_usd is not None
    requests = usage.requests if logged or not tokens else max(usage.requests, 1)
    return {
        "workload": workload[:200],
        "team": "",
        "model": usage.model[:200],
        "batch_api": usage.batch,
        "requests": requests,
        "input_tokens": total_input,
        "output_tokens": usage.output_tokens,
        "cached_input_tokens": cached,
        "cache_creation_input_tokens": written,
        "logged_requests": requests if logged else 0,
        "logged_cost_usd": usage.cost_usd if logged else Decimal(0),
        "unlogged_input_tokens": 0 if logged else total_input,
        "unlogged_cached_input_tokens": 0 if logged else cached,
        "unlogged_output_tokens": 0 if logged else usage.output_tokens,
        "unlogged_cache_creation_input_tokens": 0 if logged else written,
        "unlogged_long_context_input_tokens": 0,
        "unlogged_long_context_cached_input_tokens": 0,
        "unlogged_long_context_cache_creation_input_tokens": 0,
        "unlogged_long_context_output_tokens": 0,
    }
