"""The upload service on the database: storing, refusing and deleting uploads (the ingest
service has its own module, test_ingest.py)."""

from __future__ import annotations

import hashlib
import io
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any, BinaryIO, cast

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.test import override_settings

from audit_app.ingestion import ingest
from audit_app.ingestion import uploads as uploads_service
from audit_app.ingestion.ingest import mark_running, upload_ingest
from audit_app.ingestion.requeue import uploads_to_requeue
from audit_app.ingestion.uploads import (
    DuplicateUpload,
    UploadRefused,
    copy_hashing,
    upload_create,
    upload_delete,
)
from audit_app.models import HourlyRollup, Upload
from audit_app.reporting.filters import whole_range
from audit_app.reporting.spend import spend_report
from tests.audit_app.ingestion.ingest_samples import (
    EXPECTED_TOTAL_COST,
    SAMPLE_CSV,
)
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db


def _create(content: bytes, name: str = "requests.csv", **kwargs: Any) -> Upload:
    return upload_create(source=io.BytesIO(content), original_name=name, enqueue=False, **kwargs)


def _media_files() -> list[Path]:
    root = Path(settings.MEDIA_ROOT)
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_upload_keeps_the_raw_bytes_and_their_hash(engineer_user: Any) -> None:
    upload = _create(SAMPLE_CSV, user=engineer_user)
    assert upload.status == Upload.Status.QUEUED
    assert upload.sha256 == hashlib.sha256(SAMPLE_CSV).hexdigest()
    assert upload.size_bytes == len(SAMPLE_CSV)
    assert upload.uploaded_by == engineer_user
    with upload.file.open("rb") as stored:
        assert stored.read() == SAMPLE_CSV


def test_a_file_of_many_blocks_is_copied_and_hashed_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 64 blocks of 1 KiB, each different: a block hashed out of order or twice changes the hash.
    content = b"".join(bytes([i]) * 1000 + b"%04d" % i + b"\n" * 20 for i in range(64))
    monkeypatch.setattr(uploads_service, "COPY_CHUNK_BYTES", 1024)
    digest = hashlib.sha256()
    out = io.BytesIO()
    size = copy_hashing(io.BytesIO(content), out, digest, limit=len(content))
    assert size == len(content) == 64 * 1024
    assert out.getvalue() == content
    assert digest.hexdigest() == hashlib.sha256(content).hexdigest()
    with pytest.raises(UploadRefused, match="larger than the upload limit"):
        copy_hashing(io.BytesIO(content), io.BytesIO(), hashlib.sha256(), limit=len(content) - 1)


class _ReadOnly:
    """A stream with `read` and nothing else (no `readinto`), as some file-likes are."""

    def __init__(self, content: bytes) -> None:
        self.stream = io.BytesIO(content)

    def read(self, size: int = -1) -> bytes:
        return self.stream.read(min(size, 700))  # shorter than asked, as a socket may give


def test_a_stream_without_readinto_is_copied_and_hashed_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    content = b"".join(b"%05d," % i for i in range(2000))  # 12,000 bytes, none repeating
    monkeypatch.setattr(uploads_service, "COPY_CHUNK_BYTES", 1024)
    digest = hashlib.sha256()
    out = io.BytesIO()
    size = copy_hashing(cast(BinaryIO, _ReadOnly(content)), out, digest, limit=len(content))
    assert size == 12_000
    assert out.getvalue() == content
    assert digest.hexdigest() == hashlib.sha256(content).hexdigest()


def test_same_bytes_twice_are_refused_naming_the_first() -> None:
    first = _create(SAMPLE_CSV)
    before = set(_media_files())
    with pytest.raises(DuplicateUpload, match=f"already uploaded as upload {first.pk} "):
        _create(SAMPLE_CSV, name="renamed.csv")
    assert Upload.objects.count() == 1
    assert set(_media_files()) == before  # the second copy was not kept


@pytest.mark.parametrize(
    "status", [Upload.Status.QUEUED, Upload.Status.RUNNING, Upload.Status.SUCCEEDED]
)
def test_a_live_upload_blocks_its_bytes(status: str) -> None:
    first = _create(SAMPLE_CSV)
    Upload.objects.filter(pk=first.pk).update(status=status)
    with pytest.raises(DuplicateUpload, match=f"already uploaded as upload {first.pk} "):
        _create(SAMPLE_CSV, name="again.csv")
    assert list(Upload.objects.values_list("pk", flat=True)) == [first.pk]


def test_a_failed_upload_does_not_block_its_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose ingest failed (here: a fault while reading it) may be uploaded again; the
    new upload is ingested like any other and the failed one stays as it was."""
    real_parse = ingest._parse

    def parse_fails_once(upload: Upload) -> Any:
        monkeypatch.setattr(ingest, "_parse", real_parse)
        raise OSError("read error on the media volume")

    monkeypatch.setattr(ingest, "_parse", parse_fails_once)
    failed = upload_ingest(upload_id=_create(SAMPLE_CSV).pk)
    assert failed.status == Upload.Status.FAILED
    assert (
        failed.error == "The file could not be ingested (OSError: read error on the media volume)"
    )

    again = _create(SAMPLE_CSV, name="requests-again.csv")
    assert again.pk != failed.pk
    assert again.sha256 == failed.sha256 == hashlib.sha256(SAMPLE_CSV).hexdigest()
    again = upload_ingest(upload_id=again.pk)
    assert again.status == Upload.Status.SUCCEEDED, again.error
    # The sample's hand-checked figures (tests/audit_app/ingestion/ingest_samples.py): 6 rows, 2
    # rejected,
    # 1,000 + 2,000 + 1,000,000 + 100 input tokens.
    assert (again.rows_read, again.rows_accepted, again.rows_rejected) == (6, 4, 2)
    assert again.input_tokens == 1_003_100
    assert HourlyRollup.objects.filter(upload=failed).count() == 0
    assert Upload.objects.get(pk=failed.pk).status == Upload.Status.FAILED


def test_the_duplicate_message_names_the_live_upload_not_a_failed_one() -> None:
    failed = _create(SAMPLE_CSV, name="first.csv")
    Upload.objects.filter(pk=failed.pk).update(status=Upload.Status.FAILED)
    live = _create(SAMPLE_CSV, name="second.csv")
    with pytest.raises(DuplicateUpload) as caught:
        _create(SAMPLE_CSV, name="third.csv")
    assert caught.value.first == live
    assert f"already uploaded as upload {live.pk} (second.csv, " in str(caught.value)


def test_the_database_allows_one_live_upload_per_sha256() -> None:
    """The conditional unique constraint itself, below the service's own check."""

    def row(status: str) -> Upload:
        return Upload.objects.create(
            kind=Upload.Kind.TOKEN_LOG,
            file="uploads/x.csv",
            original_name="x.csv",
            sha256="f" * 64,
            status=status,
        )

    row(Upload.Status.FAILED)
    row(Upload.Status.FAILED)  # any number of failed ones
    live = row(Upload.Status.SUCCEEDED)
    for status in (Upload.Status.QUEUED, Upload.Status.RUNNING, Upload.Status.SUCCEEDED):
        with pytest.raises(IntegrityError), transaction.atomic():
            row(status)
    assert Upload.objects.filter(sha256="f" * 64).count() == 3
    # Reviving a failed one (as an admin editing the status would) is refused by validation
    # before it reaches the database.
    old = Upload.objects.filter(status=Upload.Status.FAILED).first()
    assert old is not None
    old.status = Upload.Status.QUEUED
    with pytest.raises(ValidationError, match="holds the same bytes"):
        old.full_clean()
    assert Upload.objects.get(pk=live.pk).status == Upload.Status.SUCCEEDED


def test_a_failed_upload_is_never_revived_when_another_upload_holds_its_bytes() -> None:
    """Retries, redelivered tasks and the requeue sweep leave a failed upload failed."""
    failed = _create(SAMPLE_CSV, name="first.csv")
    Upload.objects.filter(pk=failed.pk).update(status=Upload.Status.FAILED, error="it broke")
    live = _create(SAMPLE_CSV, name="second.csv")

    assert mark_running(failed.pk) is False
    assert upload_ingest(upload_id=failed.pk).status == Upload.Status.FAILED
    # The sweep only picks `queued` uploads: the failed one is not among them, however old.
    assert uploads_to_requeue(now=live.created_at, stale_after_seconds=0) == [live.pk]
    assert Upload.objects.get(pk=failed.pk).error == "it broke"
    assert Upload.objects.get(pk=live.pk).status == Upload.Status.QUEUED


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("earlier", [None, Upload.Status.FAILED])
def test_two_identical_uploads_racing_on_postgresql_one_wins(
    postgres_db: None, monkeypatch: pytest.MonkeyPatch, earlier: str | None
) -> None:
    """Two requests store the same bytes at once, each in its own connection. Both pass the
    check before the insert (a barrier holds each until the other has checked too), so only
    the database's partial unique index can tell them apart: exactly one upload is created and
    the other request is told which one. With an earlier failed upload of the same bytes the
    same holds: the failed one blocks nobody and stays as it was."""
    assert connection.vendor == "postgresql"
    failed = None
    if earlier is not None:
        failed = _create(SAMPLE_CSV, name="failed-before.csv")
        Upload.objects.filter(pk=failed.pk).update(status=earlier)
    files_before = set(_media_files())
    real_check = uploads_service.live_upload_of
    both_checked = threading.Barrier(2, timeout=30)
    checks: dict[str, int] = {}

    def check_then_wait(sha256: str) -> Upload | None:
        found = real_check(sha256)
        name = threading.current_thread().name
        checks[name] = checks.get(name, 0) + 1
        if checks[name] == 1:
            both_checked.wait()  # the first check of each thread, before either inserts
        return found

    monkeypatch.setattr(uploads_service, "live_upload_of", check_then_wait)
    outcomes: dict[str, Upload | DuplicateUpload | BaseException] = {}

    def upload_in_own_connection(name: str) -> None:
        try:
            outcomes[name] = _create(SAMPLE_CSV, name=f"{name}.csv")
        except BaseException as exc:  # noqa: BLE001 - the outcome is what the test checks
            outcomes[name] = exc
        finally:
            connection.close()

    threads = [
        threading.Thread(target=upload_in_own_connection, args=(name,), name=name)
        for name in ("left", "right")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    # The winner checked once; the loser checked, lost the insert, and checked again.
    assert sorted(checks.values()) == [1, 2]
    created = [o for o in outcomes.values() if isinstance(o, Upload)]
    refused = [o for o in outcomes.values() if isinstance(o, DuplicateUpload)]
    assert (len(created), len(refused)) == (1, 1), outcomes
    winner = created[0]
    assert refused[0].first.pk == winner.pk
    assert f"already uploaded as upload {winner.pk} ({winner.original_name}, " in str(refused[0])
    live = Upload.objects.exclude(status=Upload.Status.FAILED)
    assert list(live.values_list("pk", flat=True)) == [winner.pk]
    if failed is not None:
        assert Upload.objects.get(pk=failed.pk).status == Upload.Status.FAILED
        assert Upload.objects.count() == 2
    # The loser's copy of the file was removed; the winner's is kept.
    assert sorted(set(_media_files()) - files_before) == [Path(winner.file.path)]


@override_settings(UPLOAD_MAX_BYTES=100)
def test_too_large_is_refused_while_streaming_and_leaves_nothing() -> None:
    before = set(_media_files())
    with pytest.raises(UploadRefused, match=r"larger than the upload limit of 100 bytes"):
        _create(SAMPLE_CSV)
    assert Upload.objects.count() == 0
    assert set(_media_files()) == before


def test_empty_file_and_unknown_format_are_refused() -> None:
    with pytest.raises(UploadRefused, match="The file is empty."):
        _create(b"")
    with pytest.raises(UploadRefused, match="Unknown format 'xls'") as caught:
        _create(SAMPLE_CSV, requested_format="xls")
    assert caught.value.field == "format"


def test_delete_removes_exactly_that_uploads_contribution(
    django_capture_on_commit_callbacks: Any,
) -> None:
    first = upload_ingest(upload_id=_create(SAMPLE_CSV).pk)
    second_csv = SAMPLE_CSV.replace(b"r1,", b"r1b,").replace(b"u1,", b"u9,")
    second = upload_ingest(upload_id=_create(second_csv, name="second.csv").pk)
    assert spend_report(whole_range()).total_usd == EXPECTED_TOTAL_COST * 2
    raw_path = Path(first.file.path)
    with django_capture_on_commit_callbacks(execute=True):
        upload_delete(upload=first)
    assert not Upload.objects.filter(pk=first.pk).exists()
    assert HourlyRollup.objects.filter(upload_id=first.pk).count() == 0
    assert spend_report(whole_range()).total_usd == EXPECTED_TOTAL_COST
    assert HourlyRollup.objects.filter(upload=second).count() == 3
    assert not raw_path.exists()


# --- Token log or billing export -------------------------------------------------------------

FIXTURES = FIXTURES_DIR
FOCUS_CSV = (FIXTURES / "billing" / "focus-1.3_providers.csv").read_bytes()
LITELLM_CSV = (FIXTURES / "litellm" / "spend_logs.csv").read_bytes()
# tests/audit_app/ingestion/billing_exports/test_focus.py: 3.60 + 4.50 + 500 - 25 - 1.10 + 1000 +
# 98.32 + 8
# = 1588.32 USD billed; the one Azure row is 1.20 EUR.
FOCUS_BILLED = {"EUR": Decimal("1.20"), "USD": Decimal("1588.32")}


def _billed(upload: Upload) -> dict[str, Decimal]:
    return {c: Decimal(v) for c, v in upload.billing_totals["billed"].items()}


def test_auto_kind_stores_the_detected_kind_before_the_ingest() -> None:
    bill = _create(FOCUS_CSV, name="focus.csv", kind="auto")
    assert (bill.kind, bill.status, bill.requested_format) == ("billing", "queued", "auto")
    log = _create(LITELLM_CSV, name="spend.csv", kind="auto")
    assert (log.kind, log.status) == ("token_log", "queued")

    bill = upload_ingest(upload_id=bill.pk)
    assert (bill.status, bill.format, bill.rows_accepted) == ("succeeded", "focus", 9)
    assert _billed(bill) == FOCUS_BILLED
    log = upload_ingest(upload_id=log.pk)
    # tests/audit_app/ingestion/token_logs/test_detect.py: 6 good rows and 7 bad ones in this
    # fixture
    assert (log.status, log.format, log.rows_accepted, log.rows_rejected) == (
        "succeeded",
        "litellm",
        6,
        7,
    )


def test_auto_kind_with_a_named_format_takes_that_formats_kind() -> None:
    assert _create(FOCUS_CSV, kind="auto", requested_format="focus").kind == "billing"
    assert _create(LITELLM_CSV, kind="auto", requested_format="litellm").kind == "token_log"


@pytest.mark.parametrize(
    ("content", "kind", "requested_format", "message"),
    [
        (
            FOCUS_CSV,
            "token_log",
            "auto",
            "This looks like a FOCUS billing export, not a token log: upload it as a Billing "
            "export (kind=billing).",
        ),
        (
            FOCUS_CSV,
            "token_log",
            "generic",
            "This looks like a FOCUS billing export, not a token log: upload it as a Billing "
            "export (kind=billing, format auto or focus).",
        ),
        (
            FOCUS_CSV,
            "auto",
            "litellm",  # a token-log format says the kind
            "This looks like a FOCUS billing export, not a token log: upload it as a Billing "
            "export (kind=billing, format auto or focus).",
        ),
        (
            LITELLM_CSV,
            "billing",
            "auto",
            "This looks like a LiteLLM spend log, not a billing export: upload it as a Token / "
            "request log (kind=token_log).",
        ),
    ],
)
def test_an_explicit_wrong_kind_is_refused_naming_the_right_one(
    content: bytes, kind: str, requested_format: str, message: str
) -> None:
    before = set(_media_files())
    with pytest.raises(UploadRefused) as caught:
        _create(content, kind=kind, requested_format=requested_format)
    assert str(caught.value) == message
    assert caught.value.field == "kind"
    assert Upload.objects.count() == 0
    assert set(_media_files()) == before


def test_auto_kind_refuses_a_file_neither_family_knows() -> None:
    before = set(_media_files())
    with pytest.raises(UploadRefused) as caught:
        _create(b"hello,world\n1,2\n", kind="auto")
    assert str(caught.value).startswith(
        "The file is neither a token log nor a billing export this app can read: a token log "
        "is a LiteLLM spend log (`request_id`, `startTime`)"
    )
    assert caught.value.field == "file"
    with pytest.raises(UploadRefused) as caught:
        _create(b"started_at,input_tokens\n\x00\x00", kind="auto")
    # the header and its newline are bytes 0-23
    assert str(caught.value) == "The file looks binary (NUL byte at byte 24)."
    assert Upload.objects.count() == 0
    assert set(_media_files()) == before


def test_an_explicit_kind_that_nobody_recognises_still_fails_at_ingest() -> None:
    """Only a file the *other* family recognises is refused up front; anything else is kept and
    its ingest says what is missing, as before."""
    upload = upload_ingest(upload_id=_create(b"hello,world\n1,2\n", kind="token_log").pk)
    assert upload.status == Upload.Status.FAILED
    assert upload.error.startswith("the file is not a recognised token log: expected ")


def test_unknown_kind_is_refused_naming_the_kinds() -> None:
    with pytest.raises(UploadRefused) as caught:
        _create(SAMPLE_CSV, kind="invoice")
    assert str(caught.value) == (
        "Unknown kind 'invoice'; expected one of auto, token_log, billing, benchmark."
    )
    assert caught.value.field == "kind"
