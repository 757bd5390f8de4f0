"""HTTP(S) sources against a real local HTTP server: ETag and Last-Modified sent back in a
conditional GET (304: nothing read, nothing new), a server with neither (the body's sha256
decides), a restated file, and servers that fail."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from audit_app.ingestion import source_objects
from audit_app.models import Upload
from tests.audit_app.ingestion.sources.source_samples import (
    FOCUS_SAMPLE,
    RESTATED_TOTAL,
    SAMPLE_TOTAL,
    Served,
    billed,
    closed_port,
    focus_csv,
    focus_row,
    http_server,
    make_source,
    poll,
    restated_sample,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def capture(django_capture_on_commit_callbacks: Any) -> Any:
    return django_capture_on_commit_callbacks


def test_an_etag_makes_the_next_poll_a_304_and_a_restatement_a_new_upload(
    capture: Any,
) -> None:
    original, restated = restated_sample()
    served = Served(body=original)
    with http_server(served) as base:
        url = f"{base}/exports/focus.csv"
        source = make_source(name="focus-url", kind="http", location=url)

        first = poll(capture, source)
        upload = Upload.objects.get()
        assert first.uploads == (upload.pk,)
        assert (upload.original_name, upload.source_object, upload.status) == (
            "focus.csv",
            url,
            "succeeded",
        )
        assert billed() == {"USD": SAMPLE_TOTAL}
        assert source.seen[url] == {
            "etag": served.tag,
            "sha256": upload.sha256,
            "upload": upload.pk,
        }

        second = poll(capture, source)
        assert served.requests[-1]["If-None-Match"] == served.tag
        assert served.answers == [200, 304]
        assert (second.uploads, second.unchanged) == ((), 1)

        served.body = restated  # a new ETag
        third = poll(capture, source)
        assert served.answers == [200, 304, 200]
        assert len(third.uploads) == 1
        assert billed() == {"USD": RESTATED_TOTAL}
        assert Upload.objects.filter(billing_source=source).count() == 2


def test_last_modified_alone_is_sent_back_as_if_modified_since(capture: Any) -> None:
    served = Served(
        body=FOCUS_SAMPLE.read_bytes(), etag=False, last_modified="Tue, 01 Dec 2026 06:00:00 GMT"
    )
    with http_server(served) as base:
        source = make_source(kind="http", location=f"{base}/exports/focus.csv")
        poll(capture, source)
        again = poll(capture, source)
    assert served.requests[-1]["If-Modified-Since"] == "Tue, 01 Dec 2026 06:00:00 GMT"
    assert "If-None-Match" not in served.requests[-1]
    assert (served.answers, again.uploads) == ([200, 304], ())


def test_without_etag_or_last_modified_the_body_is_hashed(capture: Any) -> None:
    content = focus_csv(
        focus_row(billed="4.10", start="2026-11-02T00:00:00Z", end="2026-11-02T01:00:00Z")
    )
    served = Served(body=content, etag=False)
    with http_server(served) as base:
        source = make_source(kind="http", location=f"{base}/exports/focus.csv")
        first = poll(capture, source)
        # The upload is deleted by hand: the same bytes must not come back on their own.
        Upload.objects.filter(pk=first.uploads[0]).delete()
        again = poll(capture, source)
        assert (served.answers, again.uploads, again.unchanged) == ([200, 200], (), 1)
        assert "If-None-Match" not in served.requests[-1]

        served.body = focus_csv(
            focus_row(billed="4.20", start="2026-11-02T00:00:00Z", end="2026-11-02T01:00:00Z")
        )
        changed = poll(capture, source)
    assert len(changed.uploads) == 1
    assert billed() == {"USD": Decimal("4.20")}


def test_a_server_answering_404_is_an_error_naming_the_url(capture: Any) -> None:
    with http_server(Served(body=b"")) as base:
        source = make_source(name="feed", kind="http", location=f"{base}/missing.csv")
        result = poll(capture, source)
    assert result.errors == (
        f'Billing source "feed" could not list {base}/missing.csv: the server answered '
        "HTTP 404.",
    )
    assert (source.last_error, source.consecutive_failures) == (result.errors[0], 1)


def test_a_closed_port_is_an_error_and_nothing_else_changes(capture: Any) -> None:
    url = f"http://127.0.0.1:{closed_port()}/focus.csv"
    source = make_source(name="down", kind="http", location=url)
    result = poll(capture, source)
    assert result.errors == (
        f'Billing source "down" could not list {url}: the server could not be reached '
        "(Connection refused).",
    )
    assert (source.consecutive_failures, source.last_changed_at, source.seen) == (1, None, {})
    poll(capture, source)
    assert source.consecutive_failures == 2


def test_a_body_over_the_upload_limit_is_refused(capture: Any, settings: Any) -> None:
    settings.UPLOAD_MAX_BYTES = 100
    with http_server(Served(body=FOCUS_SAMPLE.read_bytes())) as base:
        source = make_source(name="big", kind="http", location=f"{base}/exports/focus.csv")
        result = poll(capture, source)
    assert result.refused == (
        f'Billing source "big" did not ingest {base}/exports/focus.csv: the file is larger than '
        "the upload limit of 100 bytes (UPLOAD_MAX_BYTES).",
    )
    assert Upload.objects.count() == 0


def test_a_body_of_unknown_length_is_cut_at_the_upload_limit(capture: Any, settings: Any) -> None:
    settings.UPLOAD_MAX_BYTES = 1000
    served = Served(body=FOCUS_SAMPLE.read_bytes(), content_length=False)
    with http_server(served) as base:
        source = make_source(name="big", kind="http", location=f"{base}/exports/focus.csv")
        result = poll(capture, source)
        settings.UPLOAD_MAX_BYTES = 2 * 1024**3
        served.body = focus_csv(
            focus_row(billed="7.00", start="2026-11-02T00:00:00Z", end="2026-11-02T01:00:00Z")
        )
        small = poll(capture, source)
    assert result.refused == (
        f'Billing source "big" did not ingest {base}/exports/focus.csv: the file is larger than '
        "the upload limit of 1000 bytes (UPLOAD_MAX_BYTES).",
    )
    assert len(small.uploads) == 1 and billed() == {"USD": Decimal("7.00")}


def test_requests_have_a_timeout(monkeypatch: pytest.MonkeyPatch, capture: Any) -> None:
    seen: dict[str, Any] = {}

    class Recording:
        def open(self, request: Any, timeout: float) -> Any:
            seen["timeout"] = timeout
            raise TimeoutError("timed out")

    def opener() -> Any:
        return Recording()

    monkeypatch.setattr(source_objects, "http_opener", opener)
    source = make_source(name="slow", kind="http", location="https://billing.example.com/f.csv")
    result = poll(capture, source)
    assert seen == {"timeout": 30}
    assert result.errors == (
        'Billing source "slow" could not list https://billing.example.com/f.csv: no answer '
        "within 30 s.",
    )


def test_only_http_and_https_are_followed() -> None:
    opener = source_objects.http_opener()
    schemes = {type(h).__name__ for h in opener.handlers}
    assert "FileHandler" not in schemes and "FTPHandler" not in schemes
    assert {"HTTPHandler", "HTTPSHandler", "HTTPRedirectHandler"} <= schemes
