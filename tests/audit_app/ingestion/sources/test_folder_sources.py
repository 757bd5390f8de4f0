"""Folder sources end to end: a FOCUS export appears, stays, is touched, is restated; files the
pipeline refuses; the allowed roots (symlinks resolved).

Expected totals are the FOCUS sample's BilledCost added up with the csv module
(`billed_total_by_csv`), by hand in source_samples: 20.52022672899, restated 21.52022672899.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from audit_app.ingestion.source_changes import SourceRefused, source_create
from audit_app.ingestion.sources import refused_objects
from audit_app.models import BillingCharge, Upload
from tests.audit_app.ingestion.ingest_samples import SAMPLE_CSV
from tests.audit_app.ingestion.sources.source_samples import (
    FOCUS_SAMPLE,
    RESTATED_TOTAL,
    SAMPLE_TOTAL,
    billed,
    billed_total_by_csv,
    focus_csv,
    focus_row,
    make_source,
    poll,
    restated_sample,
    write,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(tmp_path: Path, settings: Any) -> Path:
    folder = tmp_path / "sources"
    folder.mkdir()
    settings.BILLING_SOURCE_ROOTS = [folder]
    return folder


@pytest.fixture
def capture(django_capture_on_commit_callbacks: Any) -> Any:
    return django_capture_on_commit_callbacks


def test_the_totals_expected_are_the_files(root: Path) -> None:
    original, restated = restated_sample()
    assert billed_total_by_csv(original) == SAMPLE_TOTAL
    assert billed_total_by_csv(restated) == RESTATED_TOTAL


def test_a_new_export_becomes_one_billing_upload_with_its_totals(
    root: Path, capture: Any, finops_user: Any
) -> None:
    folder = root / "focus"
    source = make_source(location=str(folder), prefix="*.csv", created_by=finops_user)
    write(folder / "focus-2024-09.csv", FOCUS_SAMPLE.read_bytes())
    write(folder / "notes.txt", b"not matched by *.csv")

    result = poll(capture, source)

    upload = Upload.objects.get()
    assert result.uploads == (upload.pk,) and result.errors == () and result.listed == 1
    assert (upload.kind, upload.status, upload.format) == ("billing", "succeeded", "focus")
    assert (upload.billing_source_id, upload.source_object) == (source.pk, "focus-2024-09.csv")
    assert (upload.original_name, upload.uploaded_by) == ("focus-2024-09.csv", finops_user)
    assert upload.rows_accepted == 1000
    assert billed() == {"USD": SAMPLE_TOTAL}
    assert source.last_polled_at == result.polled_at == source.last_changed_at
    assert (source.last_error, source.consecutive_failures) == ("", 0)
    stat = (folder / "focus-2024-09.csv").stat()
    assert source.seen == {
        "focus-2024-09.csv": {
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "sha256": upload.sha256,
            "upload": upload.pk,
        }
    }


def test_an_unchanged_or_touched_file_adds_nothing(root: Path, capture: Any) -> None:
    path = write(root / "focus.csv", FOCUS_SAMPLE.read_bytes())
    source = make_source(location=str(root))
    first = poll(capture, source)
    changed_at = source.last_changed_at

    again = poll(capture, source)
    assert (again.uploads, again.unchanged, again.errors) == ((), 1, ())

    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    touched = poll(capture, source)
    assert (touched.uploads, touched.duplicates, touched.unchanged) == ((), (), 1)
    source.refresh_from_db()
    assert source.seen["focus.csv"]["mtime_ns"] == stat.st_mtime_ns + 5_000_000_000
    assert source.seen["focus.csv"]["upload"] == first.uploads[0]
    assert Upload.objects.count() == 1
    assert source.last_changed_at == changed_at
    assert billed() == {"USD": SAMPLE_TOTAL}


def test_a_restated_export_supersedes_the_earlier_upload(root: Path, capture: Any) -> None:
    original, restated = restated_sample()
    path = write(root / "focus.csv", original)
    source = make_source(location=str(root))
    first = poll(capture, source)
    assert billed() == {"USD": SAMPLE_TOTAL}

    path.write_bytes(restated)  # same size (0.0000008 -> 1.0000008), a new mtime
    second = poll(capture, source)

    assert len(second.uploads) == 1 and second.uploads != first.uploads
    newer = Upload.objects.get(pk=second.uploads[0])
    assert (newer.status, newer.billing_source_id, newer.source_object) == (
        "succeeded",
        source.pk,
        "focus.csv",
    )
    # The bills count the restated file alone, not both (42.04...).
    assert billed() == {"USD": RESTATED_TOTAL}
    older = BillingCharge.objects.filter(upload_id=first.uploads[0])
    assert older.count() == older.filter(superseded_by=newer).count() == 1000
    assert source.last_changed_at == second.polled_at


def test_bytes_already_uploaded_by_hand_are_only_remembered(root: Path, capture: Any) -> None:
    from tests.audit_app.ingestion.billing_exports.bills import ingest_bill

    content = focus_csv(
        focus_row(billed="5.25", start="2026-11-02T00:00:00Z", end="2026-11-02T01:00:00Z")
    )
    by_hand = ingest_bill(content, "by-hand.csv")
    write(root / "nov.csv", content)
    source = make_source(location=str(root))

    result = poll(capture, source)

    assert (result.uploads, result.duplicates) == ((), (by_hand.pk,))
    assert source.seen["nov.csv"]["upload"] == by_hand.pk
    assert Upload.objects.count() == 1
    assert billed() == {"USD": Decimal("5.25")}


def test_subfolders_with_a_recursive_pattern_and_dot_files_skipped(
    root: Path, capture: Any
) -> None:
    rows = [
        focus_row(
            billed=amount,
            start=f"2026-11-0{day}T00:00:00Z",
            end=f"2026-11-0{day}T01:00:00Z",
            account=account,
        )
        for day, amount, account in ((2, "1.50", "acct-a"), (3, "2.25", "acct-b"))
    ]
    write(root / "2026-11" / "a" / "day2.csv", focus_csv(rows[0]))
    write(root / "2026-11" / "b" / "day3.csv", focus_csv(rows[1]))
    write(root / "2026-11" / ".partial.csv", b"half a file")
    source = make_source(location=str(root), prefix="**/*.csv")

    result = poll(capture, source)

    names = sorted(Upload.objects.values_list("source_object", flat=True))
    assert names == ["2026-11/a/day2.csv", "2026-11/b/day3.csv"]
    assert len(result.uploads) == 2
    # Two billing accounts, so neither restates the other: 1.50 + 2.25.
    assert billed() == {"USD": Decimal("3.75")}


def test_a_file_the_pipeline_refuses_is_remembered_until_it_changes(
    root: Path, capture: Any
) -> None:
    path = write(root / "requests.csv", SAMPLE_CSV)  # a token log, not a billing export
    source = make_source(location=str(root))

    first = poll(capture, source)

    assert first.uploads == () and first.errors == ()
    assert first.refused == (
        f'Billing source "exports" did not ingest {root}/requests.csv: this looks like a '
        "generic request log, not a billing export: upload it as a Token / request log "
        "(kind=token_log).",
    )
    assert source.last_error == first.refused[0]
    assert source.consecutive_failures == 0  # nothing to retry: it is refused as it stands
    assert [r.name for r in refused_objects(source)] == ["requests.csv"]

    again = poll(capture, source)
    assert (again.refused, again.unchanged, source.last_error) == ((), 1, "")
    assert [r.name for r in refused_objects(source)] == ["requests.csv"]

    content = focus_csv(
        focus_row(billed="3.00", start="2026-11-02T00:00:00Z", end="2026-11-02T01:00:00Z")
    )
    path.write_bytes(content)
    fixed = poll(capture, source)
    assert len(fixed.uploads) == 1 and refused_objects(source) == ()


def test_a_file_over_the_upload_limit_is_refused_without_reading_it(
    root: Path, capture: Any, settings: Any
) -> None:
    settings.UPLOAD_MAX_BYTES = 1000
    write(root / "big.csv", FOCUS_SAMPLE.read_bytes())
    source = make_source(location=str(root))

    result = poll(capture, source)

    assert result.refused == (
        f'Billing source "exports" did not ingest {root}/big.csv: the file is larger than the '
        "upload limit of 1000 bytes (UPLOAD_MAX_BYTES).",
    )
    assert source.last_error == result.refused[0]
    assert Upload.objects.count() == 0


def test_a_source_outside_the_roots_is_refused(root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(SourceRefused) as refused:
        source_create(user=None, data={"name": "x", "kind": "folder", "location": str(elsewhere)})
    assert refused.value.field == "location"
    assert str(refused.value) == (
        f"The folder {elsewhere} is not under a folder billing sources may read ({root}); an "
        "operator allows others with BILLING_SOURCE_ROOTS."
    )
    # A symlink inside the root that leads out of it is resolved, and refused too.
    (root / "link").symlink_to(elsewhere)
    with pytest.raises(SourceRefused):
        source_create(user=None, data={"name": "x", "kind": "folder", "location": f"{root}/link"})
    with pytest.raises(SourceRefused, match="is not an absolute path"):
        source_create(user=None, data={"name": "x", "kind": "folder", "location": "sources"})


def test_a_source_whose_root_was_withdrawn_fails_its_poll(
    root: Path, capture: Any, settings: Any, tmp_path: Path
) -> None:
    write(root / "focus.csv", FOCUS_SAMPLE.read_bytes())
    source = make_source(location=str(root))
    settings.BILLING_SOURCE_ROOTS = [tmp_path / "other"]

    result = poll(capture, source)

    assert result.errors == (
        f'Billing source "exports" could not list {root}: {root} is not under a folder billing '
        f"sources may read ({tmp_path / 'other'}); an operator allows others with "
        "BILLING_SOURCE_ROOTS.",
    )
    assert (source.consecutive_failures, Upload.objects.count()) == (1, 0)


def test_a_file_linking_out_of_the_roots_is_refused(
    root: Path, capture: Any, tmp_path: Path
) -> None:
    secret = write(tmp_path / "secret.csv", FOCUS_SAMPLE.read_bytes())
    (root / "focus.csv").symlink_to(secret)
    source = make_source(location=str(root))

    result = poll(capture, source)

    assert result.refused == (
        f'Billing source "exports" did not ingest {root}/focus.csv: it links to {secret}, '
        "outside the folders billing sources may read.",
    )
    assert Upload.objects.count() == 0


def test_a_missing_folder_is_an_error_retried_later(root: Path, capture: Any) -> None:
    source = make_source(location=str(root / "not-yet-mounted"))
    result = poll(capture, source)
    assert result.errors == (
        f'Billing source "exports" could not list {root}/not-yet-mounted: the folder does not '
        "exist (or is not a folder).",
    )
    assert (source.last_error, source.consecutive_failures) == (result.errors[0], 1)
    assert source.last_error_at == result.polled_at
    (root / "not-yet-mounted").mkdir()
    clean = poll(capture, source)
    assert clean.errors == () and (source.last_error, source.consecutive_failures) == ("", 0)
    assert source.last_error_at is None


def test_a_file_that_goes_away_is_forgotten(root: Path, capture: Any) -> None:
    path = write(root / "focus.csv", FOCUS_SAMPLE.read_bytes())
    source = make_source(location=str(root))
    poll(capture, source)
    path.unlink()
    poll(capture, source)
    assert source.seen == {}


def test_a_full_upload_storage_is_an_error_retried_at_the_next_poll(
    root: Path, capture: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from audit_app.ingestion import uploads

    write(root / "focus.csv", FOCUS_SAMPLE.read_bytes())
    source = make_source(location=str(root))

    def full(path: Path) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(uploads, "_open_for_write", full)
        result = poll(capture, source)
    assert result.errors == (
        f'Billing source "exports" could not store {root}/focus.csv: the server has no space '
        "left to store this file (its upload storage is full), so nothing was kept. Try again "
        "once an operator has freed space.",
    )
    assert (source.consecutive_failures, source.seen, Upload.objects.count()) == (1, {}, 0)
    retried = poll(capture, source)
    assert len(retried.uploads) == 1 and billed() == {"USD": SAMPLE_TOTAL}
