"""HTTP(S) sources against a real local HTTP server: ETag and Last-Modified sent back in a
conditional GET (304: nothing read, nothing new), a server with neither (the body's sha256
decides), a restated file, and servers that fail."""

from __future__ import annotations

import base64
import time
from decimal import Decimal
from typing import Any

import pytest

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
from tests.support.outbound_peers import Route, dripping_peer, elapsed, http_peer

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
        f'Billing source "feed" could not list {base}/missing.csv: the server answered HTTP 404.',
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


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.1", "0x7f000001", "2130706433", "localhost", "[::ffff:127.0.0.1]"]
)
def test_without_the_allow_list_a_loopback_url_is_never_fetched(
    capture: Any, settings: Any, host: str
) -> None:
    settings.OUTBOUND_ALLOW_PRIVATE = []
    served = Served(body=b"internal secret")
    with http_server(served) as base:
        port = base.rsplit(":", 1)[1]
        url = f"http://{host}:{port}/exports/focus.csv"
        source = make_source(name="ssrf", kind="http", location=url)
        result = poll(capture, source)
    assert served.requests == [] and Upload.objects.count() == 0
    [error] = result.errors
    assert error.startswith(f'Billing source "ssrf" could not list {url}: the address ')
    assert "is loopback" in error or "IPv4-mapped" in error
    assert "internal secret" not in error


def test_a_metadata_address_is_refused(capture: Any) -> None:
    url = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
    source = make_source(name="meta", kind="http", location=url)
    assert poll(capture, source).errors == (
        f'Billing source "meta" could not list {url}: the address 169.254.169.254 is '
        "link-local, which outbound requests may not reach (an operator allows networks with "
        "OUTBOUND_ALLOW_PRIVATE).",
    )


def test_a_redirect_to_an_internal_address_is_refused(capture: Any, settings: Any) -> None:
    """The source's server (127.0.0.2, allowed) redirects to 127.0.0.1 (not allowed)."""
    settings.OUTBOUND_ALLOW_PRIVATE = ["127.0.0.2/32"]
    with http_peer({"/secret": Route(body=b"internal")}) as internal:
        moved = Route(status=307, headers={"Location": f"{internal.base}/secret"})
        with http_peer({"/f.csv": moved}, host="127.0.0.2") as peer:
            source = make_source(name="moved", kind="http", location=f"{peer.base}/f.csv")
            result = poll(capture, source)
    assert internal.requests == [] and Upload.objects.count() == 0
    assert result.errors == (
        f'Billing source "moved" could not list {peer.base}/f.csv: it redirected to a URL that '
        "is refused: the address 127.0.0.1 is loopback, which outbound requests may not reach "
        "(an operator allows networks with OUTBOUND_ALLOW_PRIVATE).",
    )


def test_a_redirect_to_ftp_is_refused(capture: Any) -> None:
    moved = Route(status=302, headers={"Location": "ftp://127.0.0.1/billing.csv"})
    with http_peer({"/f.csv": moved}) as peer:
        source = make_source(name="ftp", kind="http", location=f"{peer.base}/f.csv")
        result = poll(capture, source)
    assert result.errors == (
        f'Billing source "ftp" could not list {peer.base}/f.csv: it redirected to a URL that '
        "is refused: only http and https may be used, not ftp://.",
    )


def test_an_error_answer_is_named_by_its_code_only(capture: Any) -> None:
    route = Route(status=502, body=b"upstream said: token=abc123", reason="Internal Gossip")
    with http_peer({"/f.csv": route}) as peer:
        source = make_source(name="bad", kind="http", location=f"{peer.base}/f.csv")
        assert poll(capture, source).errors == (
            f'Billing source "bad" could not list {peer.base}/f.csv: the server answered HTTP 502.',
        )


def test_a_dripping_source_is_cut_at_the_total_deadline(capture: Any, settings: Any) -> None:
    settings.OUTBOUND_TIMEOUT_SECONDS = 2
    with dripping_peer(every_seconds=0.5) as base:
        source = make_source(name="drip", kind="http", location=f"{base}/focus.csv")
        started = time.monotonic()
        result = poll(capture, source)
        took = elapsed(started)
    assert result.errors == (
        f'Billing source "drip" could not read {base}/focus.csv: no complete answer within 2 s.',
    )
    assert took < 20 and Upload.objects.count() == 0


def test_credentials_in_the_url_are_sent_but_never_shown(capture: Any) -> None:
    with http_peer({"/f.csv": Route(status=500)}) as peer:
        netloc = peer.base.removeprefix("http://")
        url = f"http://ann:s3cret@{netloc}/f.csv?token=abc123&day=1"
        source = make_source(name="creds", kind="http", location=url)
        result = poll(capture, source)
    shown = f"http://***:***@{netloc}/f.csv?token=***&day=***"
    assert result.errors == (
        f'Billing source "creds" could not list {shown}: the server answered HTTP 500.',
    )
    assert peer.requests[0]["path"] == "/f.csv?token=abc123&day=1"
    assert peer.requests[0]["authorization"] == "Basic " + base64.b64encode(b"ann:s3cret").decode()
