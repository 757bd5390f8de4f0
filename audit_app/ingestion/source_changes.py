"""Billing sources: create, change and delete them, each input checked here once for the API,
the Sources page and the command line.

A source is given as the API's JSON object (`FIELDS`); each refusal is a `SourceRefused` naming
the field at fault, which the API answers with a 400 and the page shows beside the field. The
checks are per kind: a folder must lie under `settings.BILLING_SOURCE_ROOTS` (symlinks
resolved), a URL must be http(s), an S3 source names a bucket (and optionally another store's
endpoint, a region and a pair of keys), an `openai` or `anthropic` source an admin key, its
API's base URL (default the provider's) and a start date (default the first day of the previous
month); fields of another kind must be empty. The secret key and the admin key are written,
never read back (`source_payload` in the API says only whether one is set), and a URL's
credentials (user name, password, query values) are shown masked (`shown_fields`).

Finops analysts write (a superuser holds every role); the command line (no user) may too.
Polling is `audit_app.ingestion.sources`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import date, datetime
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit_app.access.audit import audit_record, audit_update
from audit_app.access.permissions import SOURCE_WRITER_ROLES, Actor, has_role
from audit_app.ingestion.billing_exports.provider_reports import FORMAT_OF, PROVIDER_OF
from audit_app.ingestion.formats import BILLING, FORMATS_BY_KIND
from audit_app.ingestion.provider_apis import DEFAULT_BASE_URLS
from audit_app.ingestion.provider_sources import default_start
from audit_app.ingestion.source_objects import check_pattern, folder_in_roots
from audit_app.lib.encryption import undecryptable
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.lib.masking import mask_url_credentials, unmasked
from audit_app.models import AuditEvent, BillingSource

FIELDS = (
    "name",
    "kind",
    "location",
    "prefix",
    "endpoint_url",
    "region",
    "access_key_id",
    "secret_access_key",
    "format",
    "api_key",
    "start_date",
    "poll_every_minutes",
    "enabled",
)
SECRET_FIELDS = ("secret_access_key", "api_key")
# What anyone reading a source may see: every field but the keys.
PUBLIC_FIELDS = tuple(field for field in FIELDS if field not in SECRET_FIELDS)
S3_ONLY = ("endpoint_url", "region", "access_key_id", "secret_access_key")
# The provider cost API kinds and the fields only they take.
API_KINDS = frozenset(FORMAT_OF)
API_ONLY = ("api_key", "start_date")
# Changing where a source reads forgets what it had seen there.
WHERE_FIELDS = ("kind", "location", "prefix", "endpoint_url")
# Pointing a source at another store or bucket forgets its keys, unless the secret is sent again.
SECRET_BOUND_FIELDS = ("kind", "location", "endpoint_url")
# Fields shown with their credentials masked (`mask_url_credentials`).
MASKED_FIELDS = ("location", "endpoint_url")
MIN_MINUTES, MAX_MINUTES = 1, 31 * 24 * 60
_MAX_LENGTH = {
    "name": 100,
    "location": 1000,
    "prefix": 500,
    "endpoint_url": 500,
    "region": 64,
    "access_key_id": 200,
    "secret_access_key": 200,
    "api_key": 500,
}
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,253}[a-z0-9]$")
_REGION = re.compile(r"^[A-Za-z0-9_-]*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
WRITER_REFUSAL = "Only finops analysts may create, change, delete or poll billing sources."


class SourceRefused(DomainError):
    """A source the service will not keep; ``field`` names the input at fault."""


@dataclass(frozen=True, kw_only=True)
class SourceValues:
    """A source's fields, checked: what `BillingSource` stores."""

    name: str
    kind: str
    location: str
    prefix: str
    endpoint_url: str
    region: str
    access_key_id: str
    secret_access_key: str
    format: str
    api_key: str
    start_date: date | None
    poll_every_minutes: int
    enabled: bool


def _refuse(field: str, message: str) -> SourceRefused:
    return SourceRefused(message, field=field)


def _text(data: Mapping[str, Any], field: str, *, required: bool = False) -> str:
    value = data.get(field, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise _refuse(field, f"{field} must be text, not {value!r}.")
    value = value.strip()
    if required and not value:
        raise _refuse(field, f"{field} is required.")
    if _CONTROL.search(value):
        raise _refuse(field, f"{field} holds a control character (such as NUL); use plain text.")
    limit = _MAX_LENGTH[field]
    if len(value) > limit:
        raise _refuse(field, f"{field} is {len(value)} characters long; at most {limit} are kept.")
    return value


def _http_url(field: str, value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or " " in value:
        raise _refuse(field, f"{field} must be an http:// or https:// URL, not {value[:200]!r}.")
    return value


def _kind(data: Mapping[str, Any]) -> str:
    kind = data.get("kind")
    if kind not in BillingSource.Kind.values:
        raise _refuse(
            "kind", f"kind must be one of {', '.join(BillingSource.Kind.values)}, not {kind!r}."
        )
    return str(kind)


def _location(kind: str, value: str) -> str:
    if kind == BillingSource.Kind.FOLDER:
        try:
            folder_in_roots(value, settings.BILLING_SOURCE_ROOTS)
        except ValueError as exc:
            raise _refuse("location", f"The folder {exc}") from None
        return value
    if kind == BillingSource.Kind.HTTP:
        return _http_url("location", value)
    if value.startswith("s3://") or "/" in value:
        raise _refuse(
            "location",
            f"location is the bucket's name alone, not {value[:200]!r}; put the key prefix "
            "in prefix.",
        )
    if not _BUCKET.match(value):
        raise _refuse(
            "location",
            f"location {value[:200]!r} is not a bucket name (3 to 255 lowercase letters, "
            "digits, dots and hyphens).",
        )
    return value


def _prefix(kind: str, value: str) -> str:
    if kind == BillingSource.Kind.HTTP and value:
        raise _refuse(
            "prefix", "prefix applies to folder and S3 sources; leave it empty for a URL."
        )
    if kind in API_KINDS and value:
        raise _refuse(
            "prefix", f"prefix applies to folder and S3 sources; leave it empty for {kind}."
        )
    if kind == BillingSource.Kind.FOLDER:
        try:
            check_pattern(value or "*")
        except ValueError as exc:
            raise _refuse("prefix", f"prefix {exc}") from None
    return value


def _s3_fields(kind: str, data: Mapping[str, Any]) -> dict[str, Any]:
    values = {field: _text(data, field) for field in S3_ONLY}
    if kind != BillingSource.Kind.S3:
        for field, value in values.items():
            if value:
                raise _refuse(
                    field,
                    f"{field} applies to S3 sources only; leave it empty for a {kind} source.",
                )
        return values
    if values["endpoint_url"]:
        _http_url("endpoint_url", values["endpoint_url"])
    if not _REGION.match(values["region"]):
        raise _refuse("region", f"region {values['region'][:64]!r} is not a region name.")
    key_id, secret = values["access_key_id"], values["secret_access_key"]
    if bool(key_id) != bool(secret):
        missing = "secret_access_key" if key_id else "access_key_id"
        raise _refuse(
            missing,
            "Give both access_key_id and secret_access_key, or neither (boto3's own "
            f"credential chain is then used); {missing} is missing.",
        )
    return values


def _api_fields(kind: str, data: Mapping[str, Any], *, today: date) -> dict[str, Any]:
    """The admin key (required) and start date (default `default_start`) of a provider cost
    API source; both empty for any other kind."""
    key = _text(data, "api_key")
    start = _start_date(data.get("start_date"))
    if kind not in API_KINDS:
        if key or start is not None:
            field = "api_key" if key else "start_date"
            raise _refuse(
                field,
                f"{field} applies to openai and anthropic sources only; leave it empty for a "
                f"{kind} source.",
            )
        return {"api_key": "", "start_date": None}
    if not key:
        raise _refuse(
            "api_key",
            f"api_key is required: the {kind} organization's admin key, which reads its costs "
            "and usage.",
        )
    if start is not None and start > today:
        raise _refuse(
            "start_date",
            f"start_date {start} is in the future; the first poll reads "
            "complete days up to yesterday.",
        )
    return {"api_key": key, "start_date": start or default_start(today)}


def _start_date(value: Any) -> date | None:
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        value = value.date()
    found: date | None = value if isinstance(value, date) else None
    if isinstance(value, str):
        try:
            found = date.fromisoformat(value.strip())
        except ValueError:
            found = None
    if found is None:
        raise _refuse(
            "start_date", f"start_date must be a date (YYYY-MM-DD), not {str(value)[:40]!r}."
        )
    if found.year < 2000:
        raise _refuse("start_date", f"start_date {found} is before 2000.")
    return found


def _api_format(kind: str, value: Any) -> str:
    """A provider source's one format (auto stands for it)."""
    wanted = FORMAT_OF[kind]
    if value not in (None, "", "auto", wanted):
        raise _refuse("format", f"format of an {kind} source is {wanted} (or auto), not {value!r}.")
    return wanted


def _format(value: Any) -> str:
    # A provider report is what an openai or anthropic source writes, never a file to find.
    formats = tuple(f for f in FORMATS_BY_KIND[BILLING] if f not in PROVIDER_OF)
    if value not in formats:
        raise _refuse(
            "format",
            f"format must be a billing format, one of {', '.join(formats)}, not {value!r}.",
        )
    return str(value)


def _minutes(value: Any) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise _refuse(
            "poll_every_minutes", f"poll_every_minutes must be a whole number, not {value!r}."
        )
    if not MIN_MINUTES <= value <= MAX_MINUTES:
        raise _refuse(
            "poll_every_minutes",
            f"poll_every_minutes must be from {MIN_MINUTES} to {MAX_MINUTES} (31 days), "
            f"not {value}.",
        )
    return value


def _enabled(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _refuse("enabled", f"enabled must be true or false, not {value!r}.")
    return value


def source_values(data: Mapping[str, Any]) -> SourceValues:
    """Check a whole source given as the API's JSON object (defaults: no prefix, format auto,
    hourly, enabled). Raises SourceRefused naming the first field at fault."""
    unknown = sorted(str(k) for k in data if k not in FIELDS)
    if unknown:
        raise _refuse(unknown[0], f"{unknown[0]} is not a source field: use {', '.join(FIELDS)}.")
    name = _text(data, "name", required=True)
    kind = _kind(data)
    api = kind in API_KINDS
    location = _text(data, "location", required=not api)
    location = _http_url("location", location or DEFAULT_BASE_URLS[kind]) if api else location
    location = _location(kind, location) if not api else location
    prefix = _prefix(kind, _text(data, "prefix"))
    return SourceValues(
        name=name,
        kind=kind,
        location=location,
        prefix=prefix,
        **_s3_fields(kind, data),
        **_api_fields(kind, data, today=timezone.now().date()),
        format=(
            _api_format(kind, data.get("format")) if api else _format(data.get("format", "auto"))
        ),
        poll_every_minutes=_minutes(data.get("poll_every_minutes", 60)),
        enabled=_enabled(data.get("enabled", True)),
    )


def source_data(source: BillingSource) -> dict[str, Any]:
    """A source as the API's JSON object, its secret key included (for `source_update` to
    check the whole source again; never answered to anyone)."""
    return {field: getattr(source, field) for field in FIELDS}


def changed_data(before: Mapping[str, Any], sent: Mapping[str, Any]) -> dict[str, Any]:
    """The source's fields once ``sent`` is applied over ``before`` (both the API's JSON
    object). A location or endpoint sent back masked, as it was shown, stands for the stored
    one. Pointing the source elsewhere (kind, location or bucket, endpoint) forgets the stored
    secret key and its key id, unless ``sent`` gives the secret again: a key is never sent to
    a place other than the one it was given for."""
    sent = dict(sent)
    for field in MASKED_FIELDS:
        if isinstance(sent.get(field), str):
            sent[field] = unmasked(
                sent[field], [str(before.get(field) or "")], mask_url_credentials
            )
    merged = {**before, **sent}
    moved = any(merged.get(field) != before.get(field) for field in SECRET_BOUND_FIELDS)
    if moved and before.get("secret_access_key") and not sent.get("secret_access_key"):
        merged["secret_access_key"] = ""
        if merged.get("access_key_id") == before.get("access_key_id"):
            merged["access_key_id"] = ""
    if moved and before.get("api_key") and not sent.get("api_key"):
        merged["api_key"] = ""
    if merged.get("kind") != before.get("kind"):
        # Another kind has another format and no start date of this one.
        for field in ("format", "start_date"):
            if field not in sent:
                merged[field] = "auto" if field == "format" else None
    return merged


def shown_fields(source: BillingSource) -> dict[str, Any]:
    """What anyone reading a source sees of it: every field but the secret key, a URL's
    credentials masked."""
    fields = {field: getattr(source, field) for field in PUBLIC_FIELDS}
    for field in MASKED_FIELDS:
        fields[field] = mask_url_credentials(fields[field])
    return fields


def check_writer(user: Actor) -> None:
    """Refuse (403) a user who may not change billing sources; the command line may."""
    if user is not None and not has_role(user, SOURCE_WRITER_ROLES):
        raise SourceRefused(WRITER_REFUSAL, kind=ErrorKind.FORBIDDEN)


def _save(source: BillingSource, values: SourceValues) -> None:
    for name, value in asdict(values).items():
        setattr(source, name, value)
    try:
        with transaction.atomic():
            source.save()
    except IntegrityError:
        if BillingSource.objects.filter(name=values.name).exclude(pk=source.pk).exists():
            message = f"A billing source named {values.name!r} already exists."
            raise _refuse("name", message) from None
        raise


@transaction.atomic
def source_create(*, user: Actor, data: Mapping[str, Any]) -> BillingSource:
    """A new source from the API's JSON object; refused (SourceRefused) naming the field. Beat
    polls it at its next check (within BILLING_SOURCES_CHECK_EVERY_SECONDS)."""
    check_writer(user)
    values = source_values(data)
    source = BillingSource(created_by=user if has_role(user) else None)
    _save(source, values)
    audit_record(
        actor=user,
        action=AuditEvent.Action.SOURCE_CHANGED,
        obj=source,
        summary=f"created billing source {source.name} ({source.kind} {_shown(source)})",
        details={"change": "created", **_audit_details(source)},
    )
    return source


@transaction.atomic
def source_update(*, source: BillingSource, user: Actor, data: Mapping[str, Any]) -> BillingSource:
    """Change the fields ``data`` gives (the others stay); the whole source is checked again.
    Pointing it elsewhere (kind, location, prefix, endpoint) forgets what it had seen, so the
    new place is read in full at the next poll, and (but for the prefix) forgets its keys
    unless ``data`` gives the secret again (`changed_data`)."""
    check_writer(user)
    locked = BillingSource.objects.select_for_update().get(pk=source.pk)
    before = source_data(locked)
    values = source_values(changed_data(before, data))
    if any(before[field] != getattr(values, field) for field in (*WHERE_FIELDS, "start_date")):
        locked.seen = {}
        locked.consecutive_failures = 0
    old = _audit_details(locked)
    _save(locked, values)
    audit_update(
        actor=user,
        action=AuditEvent.Action.SOURCE_CHANGED,
        obj=locked,
        what=f"billing source {locked.name}",
        before=old,
        after=_audit_details(locked),
    )
    return locked


@transaction.atomic
def source_delete(*, source: BillingSource, user: Actor) -> None:
    """Delete the source; the uploads it created stay (no longer linked to it)."""
    check_writer(user)
    audit_record(
        actor=user,
        action=AuditEvent.Action.SOURCE_CHANGED,
        obj=source,
        summary=f"deleted billing source {source.name} ({source.kind} {_shown(source)})",
        details={"change": "deleted", **_audit_details(source)},
    )
    source.delete()


def _shown(source: BillingSource) -> str:
    return mask_url_credentials(source.location)


def _audit_details(source: BillingSource) -> dict[str, Any]:
    """What the audit trail keeps of a source: every field but the secret key, which is only
    said to be set or not, and a URL's credentials masked."""
    details = shown_fields(source)
    details["has_secret_access_key"] = bool(source.secret_access_key)
    details["has_api_key"] = bool(source.api_key)
    if details.get("start_date") is not None:
        details["start_date"] = details["start_date"].isoformat()
    return details


def secrets_encrypt_again() -> tuple[int, list[str]]:
    """Encrypt every stored secret key and admin key again with the first key of
    FIELD_ENCRYPTION_KEYS (a key rotation's middle step): how many sources were, and those
    whose secret no key decrypts (left as they are)."""
    done, failed = 0, []
    stored = BillingSource.objects.exclude(secret_access_key="", api_key="").order_by("pk")
    for source in stored:
        fields = [field for field in SECRET_FIELDS if getattr(source, field)]
        if any(undecryptable(getattr(source, field)) for field in fields):
            failed.append(source.name)
            continue
        source.save(update_fields=fields)
        done += 1
    return done, failed
