"""`manage.py sources`: the list (table and --json, never the secret), --poll of all enabled
sources or one by name with the uploads ingested in-process, and a non-zero exit when a source
could not be read."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from audit_app.models import Upload
from tests.audit_app.ingestion.sources.source_samples import (
    FOCUS_SAMPLE,
    SAMPLE_TOTAL,
    billed,
    closed_port,
    make_source,
    write,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(tmp_path: Path, settings: Any) -> Path:
    settings.BILLING_SOURCE_ROOTS = [tmp_path]
    return tmp_path


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command("sources", *args, stdout=out)
    return out.getvalue()


def test_the_list_as_json_and_as_a_table(root: Path) -> None:
    make_source(
        name="cur",
        kind="s3",
        location="acme-billing",
        prefix="cur/",
        access_key_id="AKIA",
        secret_access_key="very-secret",
        last_polled_at=datetime(2026, 12, 1, 9, 0, tzinfo=UTC),
        last_error='Billing source "cur" could not list s3://acme-billing/cur/: denied.',
        consecutive_failures=1,
    )
    make_source(name="mounted", location=str(root), enabled=False)

    rows = json.loads(_run("--json"))

    assert rows[0] == {
        "id": rows[0]["id"],
        "name": "cur",
        "kind": "s3",
        "where": "s3://acme-billing/cur/",
        "prefix": "cur/",
        "format": "auto",
        "start_date": None,
        "has_api_key": False,
        "poll_every_minutes": 60,
        "enabled": True,
        "last_polled_at": "2026-12-01T09:00:00+00:00",
        "next_poll_at": "2026-12-01T09:02:00+00:00",
        "last_changed_at": None,
        "last_error": 'Billing source "cur" could not list s3://acme-billing/cur/: denied.',
        "consecutive_failures": 1,
        "uploads": 0,
    }
    assert (rows[1]["name"], rows[1]["enabled"], rows[1]["next_poll_at"]) == (
        "mounted",
        False,
        None,
    )
    table = _run()
    assert "very-secret" not in table and "very-secret" not in json.dumps(rows)
    lines = table.splitlines()
    assert lines[1].split() == [
        "cur",
        "s3",
        "2026-12-01",
        "09:00",
        "never",
        "1",
        "s3://acme-billing/cur/",
    ]
    assert lines[2] == (
        '  last error: Billing source "cur" could not list s3://acme-billing/cur/: denied.'
    )
    assert lines[3].endswith(f"{root} (disabled)")


def test_poll_ingests_in_process_and_a_second_poll_finds_nothing_new(root: Path) -> None:
    write(root / "focus.csv", FOCUS_SAMPLE.read_bytes())
    make_source(name="mounted", location=str(root))

    first = json.loads(_run("--poll", "--json"))

    upload = Upload.objects.get()
    assert upload.status == "succeeded" and billed() == {"USD": SAMPLE_TOTAL}
    assert first[0]["uploads"] == [upload.pk]
    assert first[0]["ingested"] == [{"id": upload.pk, "status": "succeeded", "error": ""}]
    assert _run("--poll").splitlines() == [
        "mounted: 1 objects, 1 unchanged, 0 new uploads, 0 already uploaded"
    ]


def test_poll_by_name_even_when_disabled_and_an_unknown_name(root: Path) -> None:
    write(root / "focus.csv", FOCUS_SAMPLE.read_bytes())
    make_source(name="mounted", location=str(root), enabled=False)
    assert _run("--poll") == ""  # only enabled sources, when none is named
    lines = _run("--poll", "mounted").splitlines()
    upload = Upload.objects.get()
    assert lines == [
        "mounted: 1 objects, 0 unchanged, 1 new uploads, 0 already uploaded",
        f"  upload {upload.pk}: succeeded",
    ]
    with pytest.raises(CommandError, match=r"No billing source is named 'other'; known: mounted\."):
        _run("--poll", "other")


def test_a_source_that_cannot_be_read_fails_the_command_after_the_others(root: Path) -> None:
    write(root / "focus.csv", FOCUS_SAMPLE.read_bytes())
    url = f"http://127.0.0.1:{closed_port()}/f.csv"
    make_source(name="a-down", kind="http", location=url)
    make_source(name="b-mounted", location=str(root))
    out = io.StringIO()
    with pytest.raises(CommandError, match=r"^1 of 2 sources could not be read: a-down$"):
        call_command("sources", "--poll", stdout=out)
    assert out.getvalue().splitlines()[:2] == [
        "a-down: 0 objects, 0 unchanged, 0 new uploads, 0 already uploaded",
        f'  Billing source "a-down" could not list {url}: the server could not be reached '
        "(Connection refused).",
    ]
    assert Upload.objects.get().status == "succeeded"
