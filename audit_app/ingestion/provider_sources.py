"""Provider cost API sources: one poll of an `openai` or `anthropic` billing source.

A poll reads the provider's cost and usage report for its window of complete UTC days
(`poll_window`: from the source's start date at first, then from the last complete day read,
minus LOOKBACK_DAYS, up to yesterday) and writes it as one upload of a stored JSON document
(`billing_exports.provider_reports`), ingested like any billing upload. Days whose figures
are the ones the last poll read are only remembered: a second poll adds nothing. A refused
key is marked on the source and retried no sooner than its interval; a rate limit or an
outage takes the sources' usual failure backoff; a malformed page lands nothing.

Its rules in full: `docs/using.md`, section "Provider cost APIs", and `docs/methods.md`,
section "Provider cost and usage reports".
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db import transaction

from audit_app.ingestion.billing_exports.provider_reports import (
    FORMAT_OF,
    day_figures,
    report_document,
)
from audit_app.ingestion.formats import BILLING
from audit_app.ingestion.provider_apis import (
    DEFAULT_BASE_URLS,
    ProviderApiError,
    ProviderMalformed,
    ProviderRefused,
    read_report,
)
from audit_app.ingestion.uploads import DuplicateUpload, StorageFull, UploadRefused, upload_create
from audit_app.lib.masking import mask_url_credentials
from audit_app.models import BillingSource, Upload

logger = logging.getLogger(__name__)

API_KINDS = frozenset(DEFAULT_BASE_URLS)
# Providers revise recent days: every poll reads the last LOOKBACK_DAYS complete days again.
LOOKBACK_DAYS = 3
# What `BillingSource.seen` keeps for a provider source.
COMPLETE_THROUGH = "complete_through"  # the last complete day read (ISO date)
FIGURES = "figures"  # {day: sha256 of its figures} of the days the last poll read
UPLOAD = "upload"  # the upload of the last report that changed
REFUSED = "refused"  # the status of the last refusal of the key (401/403), if the last poll


@dataclass(frozen=True, kw_only=True)
class ApiPoll:
    """What one poll of a provider source did; `sources.PollResult` is built from it."""

    window: tuple[date, date] | None = None  # days read, end exclusive
    pages: int = 0
    upload_id: int | None = None
    duplicate_of: int | None = None
    unchanged: bool = False
    error: str = ""
    refused_status: int | None = None
    figures: dict[str, str] | None = None  # each day's fingerprint (`day_figures`)


def default_start(today: date) -> date:
    """The first day of the month before ``today``'s: how far back a first poll reads unless
    the source names a start date."""
    first = today.replace(day=1)
    return (first - timedelta(days=1)).replace(day=1)


def account_of(source: BillingSource) -> str:
    """The billing account a source's charges are kept under: stable across renames, so a
    later report of a day always restates the earlier one."""
    return f"{source.kind}-source-{source.pk}"


def poll_window(source: BillingSource, today: date) -> tuple[date, date] | None:
    """The complete UTC days the next poll reads, [start, today); None when there is none yet
    (a start date from today on)."""
    first = source.start_date or default_start(today)
    start = first
    read = (source.seen or {}).get(COMPLETE_THROUGH)
    if isinstance(read, str):
        start = max(first, date.fromisoformat(read) + timedelta(days=1 - LOOKBACK_DAYS))
    return (start, today) if start < today else None


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith(".") else f"{text}."


def api_poll(source: BillingSource, *, now: datetime, enqueue: bool) -> ApiPoll:
    """Read the source's window and land it as one upload; never raises for what the provider
    answers. The key goes to the reader alone, and no message here holds it."""
    window = poll_window(source, now.astimezone(UTC).date())
    if window is None:
        return ApiPoll()
    start, end = window
    try:
        report = read_report(
            kind=source.kind,
            base_url=source.location or DEFAULT_BASE_URLS[source.kind],
            api_key=source.api_key,
            start=start,
            end=end,
            source_name=source.name,
        )
    except ProviderRefused as exc:
        return ApiPoll(window=window, error=_sentence(str(exc)), refused_status=exc.status)
    except ProviderMalformed as exc:
        logger.warning("billing source %s: malformed page: %s", source.pk, exc)
        return ApiPoll(window=window, error=_sentence(str(exc)))
    except (ProviderApiError, ValueError) as exc:
        return ApiPoll(window=window, error=_sentence(str(exc)))
    except Exception as exc:  # a bug's backstop: the key is never in a type name
        logger.exception("billing source %s: reading the report failed", source.pk)
        return ApiPoll(
            window=window,
            error=f'Billing source "{source.name}" could not read '
            f"{mask_url_credentials(source.location)}: {type(exc).__name__}.",
        )
    seen = source.seen or {}
    if not report.costs and not report.usage:
        return ApiPoll(window=window, pages=report.pages_read, unchanged=True)
    follows = seen.get(UPLOAD)
    document = report_document(
        provider=source.kind,
        account=account_of(source),
        start=start,
        end=end,
        costs=report.costs,
        usage=report.usage,
        follows=follows if isinstance(follows, int) else None,
    )
    figures = day_figures(document)
    known = seen.get(FIGURES)
    if isinstance(known, dict) and all(known.get(day) == print_ for day, print_ in figures.items()):
        # Every day as the last poll read it: nothing new to land.
        return ApiPoll(window=window, pages=report.pages_read, unchanged=True, figures=figures)
    landed = _land(source, document, window, enqueue=enqueue)
    return replace(landed, pages=report.pages_read, figures=None if landed.error else figures)


def _land(
    source: BillingSource, document: bytes, window: tuple[date, date], *, enqueue: bool
) -> ApiPoll:
    start, end = window
    last = end - timedelta(days=1)
    name = f"{source.kind}-costs-{start.isoformat()}-to-{last.isoformat()}.json"
    try:
        with transaction.atomic():
            upload = upload_create(
                source=io.BytesIO(document),
                original_name=name,
                kind=BILLING,
                requested_format=FORMAT_OF[source.kind],
                user=source.created_by,
                enqueue=enqueue,
            )
            Upload.objects.filter(pk=upload.pk).update(
                billing_source=source, source_object=f"{start.isoformat()}..{last.isoformat()}"
            )
    except DuplicateUpload as exc:
        return ApiPoll(window=window, duplicate_of=exc.first.pk)
    except (UploadRefused, StorageFull) as exc:
        return ApiPoll(
            window=window,
            error=f'Billing source "{source.name}" could not store its report: {exc}',
        )
    logger.info(
        "billing source %s: report %s..%s became upload %s", source.pk, start, last, upload.pk
    )
    return ApiPoll(window=window, upload_id=upload.pk)


def api_seen(source: BillingSource, poll: ApiPoll) -> dict[str, Any]:
    """The source's memory after a poll: the last complete day read and the last report's
    figures advance only with a poll that read them; a refusal is remembered until a poll
    gets past it."""
    seen = dict(source.seen or {})
    seen.pop(REFUSED, None)
    if poll.refused_status is not None:
        seen[REFUSED] = poll.refused_status
    if poll.error or poll.window is None:
        return seen
    seen[COMPLETE_THROUGH] = (poll.window[1] - timedelta(days=1)).isoformat()
    if poll.figures is not None:
        seen[FIGURES] = poll.figures
    if poll.upload_id is not None:
        seen[UPLOAD] = poll.upload_id
    return seen
