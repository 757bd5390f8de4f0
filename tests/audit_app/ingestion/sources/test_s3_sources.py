"""S3 sources against moto's in-process S3: keys under a prefix (and a pattern), listed page by
page, ETag and size as the fingerprint, an S3-compatible endpoint passed through to boto3, keys
given or boto3's own chain, objects over the upload limit, and a bucket that does not exist."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import boto3
import pytest
from moto import mock_aws

from audit_app.ingestion import source_objects, sources
from audit_app.models import Upload
from tests.audit_app.ingestion.sources.source_samples import (
    RESTATED_TOTAL,
    SAMPLE_TOTAL,
    billed,
    focus_csv,
    focus_row,
    make_source,
    poll,
    restated_sample,
)

pytestmark = pytest.mark.django_db
BUCKET = "acme-billing"


@pytest.fixture
def capture(django_capture_on_commit_callbacks: Any) -> Any:
    return django_capture_on_commit_callbacks


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "MOTO_S3_CUSTOM_ENDPOINTS": "http://127.0.0.1:9000",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


@pytest.fixture
def client_kwargs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every boto3.client call the sources make, with its keyword arguments."""
    calls: list[dict[str, Any]] = []
    real = boto3.client

    def recording(service: str, **kwargs: Any) -> Any:
        calls.append({"service": service, **kwargs})
        return real(service, **kwargs)

    monkeypatch.setattr(boto3, "client", recording)
    return calls


def _day(day: int, amount: str, account: str) -> bytes:
    return focus_csv(
        focus_row(
            billed=amount,
            start=f"2026-11-{day:02d}T00:00:00Z",
            end=f"2026-11-{day:02d}T01:00:00Z",
            account=account,
        )
    )


def test_keys_under_the_prefix_are_listed_page_by_page(
    s3: Any, capture: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(source_objects, "S3_PAGE_SIZE", 2)
    for n in range(1, 6):  # five accounts: none restates another
        s3.put_object(
            Bucket=BUCKET, Key=f"focus/2026-11/acct-{n}.csv", Body=_day(n, f"{n}.00", f"a{n}")
        )
    s3.put_object(Bucket=BUCKET, Key="focus/2026-11/", Body=b"")  # a "folder" key
    s3.put_object(Bucket=BUCKET, Key="other/acct-9.csv", Body=_day(9, "9.00", "a9"))
    pages: list[int] = []
    real_client = sources.s3_client

    def counting_client(**kwargs: Any) -> Any:
        client = real_client(**kwargs)
        client.meta.events.register(
            "after-call.s3.ListObjectsV2",
            lambda **call: pages.append(len(call["parsed"].get("Contents", []))),
        )
        return client

    monkeypatch.setattr(sources, "s3_client", counting_client)
    source = make_source(name="bucket", kind="s3", location=BUCKET, prefix="focus/")

    result = poll(capture, source)

    assert pages == [2, 2, 2]  # six keys under focus/, two a page
    assert sorted(Upload.objects.values_list("source_object", flat=True)) == [
        f"focus/2026-11/acct-{n}.csv" for n in range(1, 6)
    ]
    assert (len(result.uploads), result.listed, result.errors) == (5, 5, ())
    # 1 + 2 + 3 + 4 + 5; other/acct-9.csv is outside the prefix.
    assert billed() == {"USD": Decimal("15.00")}
    entry = source.seen["focus/2026-11/acct-1.csv"]
    head = s3.head_object(Bucket=BUCKET, Key="focus/2026-11/acct-1.csv")
    assert (entry["etag"], entry["size"]) == (head["ETag"], head["ContentLength"])


def test_unchanged_keys_are_not_read_again_and_a_rewritten_key_supersedes(
    s3: Any, capture: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    original, restated = restated_sample()
    s3.put_object(Bucket=BUCKET, Key="focus/export.csv", Body=original)
    source = make_source(name="bucket", kind="s3", location=BUCKET, prefix="focus/")
    poll(capture, source)
    assert billed() == {"USD": SAMPLE_TOTAL}

    reads: list[str] = []
    real_open = source_objects.S3Reader.open_object
    monkeypatch.setattr(
        source_objects.S3Reader,
        "open_object",
        lambda self, obj: reads.append(obj.name) or real_open(self, obj),
    )
    again = poll(capture, source)
    assert (again.uploads, again.unchanged, reads) == ((), 1, [])

    s3.put_object(Bucket=BUCKET, Key="focus/export.csv", Body=restated)
    restatement = poll(capture, source)
    assert reads == ["focus/export.csv"] and len(restatement.uploads) == 1
    assert billed() == {"USD": RESTATED_TOTAL}


def test_a_pattern_after_the_prefix_selects_keys(s3: Any, capture: Any) -> None:
    s3.put_object(Bucket=BUCKET, Key="cur/report-00001.csv", Body=_day(2, "1.25", "a1"))
    s3.put_object(Bucket=BUCKET, Key="cur/report-Manifest.json", Body=b'{"reportKeys": []}')
    source = make_source(name="cur", kind="s3", location=BUCKET, prefix="cur/*.csv")
    result = poll(capture, source)
    assert list(Upload.objects.values_list("source_object", flat=True)) == ["cur/report-00001.csv"]
    assert (result.listed, result.refused) == (1, ())


def test_an_s3_compatible_endpoint_and_keys_are_passed_to_boto3(
    s3: Any, capture: Any, client_kwargs: list[dict[str, Any]]
) -> None:
    minio = boto3.client(
        "s3",
        endpoint_url="http://127.0.0.1:9000",
        aws_access_key_id="minio",
        aws_secret_access_key="minio-secret",
        region_name="us-east-1",
    )
    minio.create_bucket(Bucket="exports")
    minio.put_object(Bucket="exports", Key="nov.csv", Body=_day(3, "2.50", "a1"))
    client_kwargs.clear()
    source = make_source(
        name="minio",
        kind="s3",
        location="exports",
        endpoint_url="http://127.0.0.1:9000",
        region="eu-west-3",
        access_key_id="minio",
        secret_access_key="minio-secret",
    )

    result = poll(capture, source)

    assert len(result.uploads) == 1 and billed() == {"USD": Decimal("2.50")}
    (call,) = client_kwargs
    config = call.pop("config")
    assert call == {
        "service": "s3",
        "endpoint_url": "http://127.0.0.1:9000",
        "region_name": "eu-west-3",
        "aws_access_key_id": "minio",
        "aws_secret_access_key": "minio-secret",
    }
    assert (config.connect_timeout, config.read_timeout) == (30, 30)
    assert config.retries == {"total_max_attempts": 2, "mode": "standard"}


def test_without_keys_boto3_uses_its_own_credential_chain(
    s3: Any, capture: Any, client_kwargs: list[dict[str, Any]]
) -> None:
    source = make_source(name="role", kind="s3", location=BUCKET)
    poll(capture, source)
    (call,) = client_kwargs
    assert sorted(call) == ["config", "service"]


def test_an_object_over_the_upload_limit_is_refused_without_reading_it(
    s3: Any, capture: Any, settings: Any
) -> None:
    settings.UPLOAD_MAX_BYTES = 10
    s3.put_object(Bucket=BUCKET, Key="focus/big.csv", Body=_day(2, "1.00", "a1"))
    source = make_source(name="bucket", kind="s3", location=BUCKET, prefix="focus/")
    result = poll(capture, source)
    assert result.refused == (
        f'Billing source "bucket" did not ingest s3://{BUCKET}/focus/big.csv: the file is '
        "larger than the upload limit of 10 bytes (UPLOAD_MAX_BYTES).",
    )
    assert (source.last_error, source.consecutive_failures) == (result.refused[0], 0)
    assert Upload.objects.count() == 0


def test_a_missing_bucket_is_an_error(s3: Any, capture: Any) -> None:
    source = make_source(name="gone", kind="s3", location="no-such-bucket", prefix="focus/")
    result = poll(capture, source)
    assert result.errors == (
        'Billing source "gone" could not list s3://no-such-bucket/focus/: the bucket does not '
        "exist (NoSuchBucket).",
    )
    assert (source.last_error, source.consecutive_failures) == (result.errors[0], 1)


def test_a_store_that_stops_answering_mid_poll_stops_the_poll(
    s3: Any, capture: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.exceptions import EndpointConnectionError

    for n in range(1, 6):
        s3.put_object(Bucket=BUCKET, Key=f"focus/{n}.csv", Body=_day(n, "1.00", f"a{n}"))
    source = make_source(name="bucket", kind="s3", location=BUCKET, prefix="focus/")
    attempts: list[str] = []

    def unreachable(self: Any, obj: Any) -> Any:
        attempts.append(obj.name)
        raise EndpointConnectionError(endpoint_url=f"https://{BUCKET}.s3.amazonaws.com/{obj.name}")

    monkeypatch.setattr(source_objects.S3Reader, "open_object", unreachable)
    result = poll(capture, source)

    assert attempts == ["focus/1.csv", "focus/2.csv", "focus/3.csv"]
    assert result.errors[0] == (
        f'Billing source "bucket" could not list s3://{BUCKET}/focus/: the poll stopped after 3 '
        "objects in a row could not be read; the rest wait for the next poll."
    )
    assert result.errors[1] == (
        f'Billing source "bucket" could not read s3://{BUCKET}/focus/1.csv: the store could not '
        f'be reached (Could not connect to the endpoint URL: "https://{BUCKET}.s3.amazonaws.com/'
        'focus/1.csv").'
    )
    assert len(result.errors) == 4
    assert source.last_error == f"{result.errors[0]} (3 more in the same poll.)"
    assert (source.consecutive_failures, source.seen, Upload.objects.count()) == (1, {}, 0)


def _authorization_headers(client_kwargs: list[dict[str, Any]]) -> Any:
    """Wrap boto3.client (already recording) so every request's Authorization is kept."""
    seen: list[str | bytes | None] = []
    real = boto3.client

    def capturing(service: str, **kwargs: Any) -> Any:
        client = real(service, **kwargs)
        client.meta.events.register(
            "before-send.s3", lambda request, **_: seen.append(request.headers.get("Authorization"))
        )
        return client

    return capturing, seen


def test_a_keyless_source_at_a_custom_endpoint_sends_unsigned_requests(
    s3: Any, capture: Any, client_kwargs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's own AWS credentials (here AWS_ACCESS_KEY_ID=testing in the environment)
    never sign a request to a store someone typed in."""
    capturing, seen = _authorization_headers(client_kwargs)
    monkeypatch.setattr(boto3, "client", capturing)
    source = make_source(
        name="minio", kind="s3", location="exports", endpoint_url="http://127.0.0.1:9000"
    )
    poll(capture, source)
    assert seen and all(header is None for header in seen)


def test_with_ambient_credentials_allowed_the_chain_signs(
    s3: Any,
    capture: Any,
    client_kwargs: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    settings.S3_AMBIENT_CREDENTIALS = True
    capturing, seen = _authorization_headers(client_kwargs)
    monkeypatch.setattr(boto3, "client", capturing)
    source = make_source(
        name="minio", kind="s3", location="exports", endpoint_url="http://127.0.0.1:9000"
    )
    poll(capture, source)
    # Signed with the chain's key (moto's stand-in for the environment's).
    signed = [header if isinstance(header, bytes) else str(header).encode() for header in seen]
    assert signed and all(h.startswith(b"AWS4-HMAC-SHA256 Credential=") for h in signed)


def test_an_endpoint_at_an_internal_address_is_refused_before_boto3_is_asked(
    s3: Any, capture: Any, client_kwargs: list[dict[str, Any]], settings: Any
) -> None:
    settings.OUTBOUND_ALLOW_PRIVATE = []
    source = make_source(
        name="minio",
        kind="s3",
        location="exports",
        endpoint_url="http://127.0.0.1:9000",
        access_key_id="minio",
        secret_access_key="minio-secret",
    )
    result = poll(capture, source)
    assert client_kwargs == []
    assert result.errors == (
        'Billing source "minio" could not list s3://exports/: the endpoint '
        "http://127.0.0.1:9000 is refused: the address 127.0.0.1 is loopback, which outbound "
        "requests may not reach (an operator allows networks with OUTBOUND_ALLOW_PRIVATE).",
    )
