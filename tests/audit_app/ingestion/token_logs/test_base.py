"""Shared coercions, the one row validator and the text reading of `importers.base`."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from audit_app.ingestion.reading import (
    ImportFileError,
    RowRejected,
    check_head,
    iter_text_lines,
    text,
)
from audit_app.ingestion.token_logs.base import CanonicalRequest, SourceFields, build_request
from audit_app.ingestion.token_logs.coerce import (
    MAX_TOKENS_PER_REQUEST,
    parse_bool,
    parse_cost,
    parse_json_object,
    parse_status,
    parse_tags,
    parse_timestamp,
    parse_token_count,
    parse_unix_nanos,
)
from audit_app.ingestion.token_logs.tabular import read_json_document

NOON = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


# --- timestamps -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2024-05-01T12:00:00Z", NOON),
        ("2024-05-01 12:00:00", NOON),  # no T, no zone: naive means UTC
        ("2024-05-01t12:00:00z", NOON),
        ("2024-05-01T12:00Z", NOON),  # seconds left out
        ("2024-05-01 12:00:00 UTC", NOON),
        ("2024-05-01T14:00:00+02:00", NOON),
        ("2024-05-01T07:30:00-0430", NOON),
        ("2024-05-01 12:00:00+00", NOON),  # PostgreSQL text output
        ("  2024-05-01T12:00:00Z  ", NOON),
        ("2024-05-01T12:00:00.5Z", NOON.replace(microsecond=500_000)),
        ("2024-05-01T12:00:00,25Z", NOON.replace(microsecond=250_000)),
        ("2024-05-01 12:00:00.123456", NOON.replace(microsecond=123_456)),
        ("2024-05-01T12:00:00.123456789Z", NOON.replace(microsecond=123_456)),  # ns cut
        # epoch numbers, unit told by magnitude; 1714564800 s is 2024-05-01T12:00:00Z
        (1714564800, NOON),
        ("1714564800", NOON),
        (1714564800.5, NOON.replace(microsecond=500_000)),
        (Decimal("1714564800.25"), NOON.replace(microsecond=250_000)),
        ("1714564800123", NOON.replace(microsecond=123_000)),  # ms
        (1714564800123456, NOON.replace(microsecond=123_456)),  # µs
        ("1714564800123456789", NOON.replace(microsecond=123_456)),  # ns
        (datetime(2024, 5, 1, 12, 0), NOON),  # noqa: DTZ001 - a naive datetime is the point
        (datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2))), NOON),
    ],
)
def test_parse_timestamp_accepts(raw: object, expected: datetime) -> None:
    parsed = parse_timestamp(raw, field="startTime")
    assert parsed == expected
    assert parsed is not None and parsed.tzinfo == UTC


@pytest.mark.parametrize("raw", [None, "", "   ", "NULL", "null", "None"])
def test_parse_timestamp_missing_is_none(raw: object) -> None:
    assert parse_timestamp(raw, field="startTime") is None


@pytest.mark.parametrize(
    ("raw", "reason_part"),
    [
        ("yesterday noon", "`startTime` is not a timestamp: 'yesterday noon'"),
        ("05/01/2024 12:00", "`startTime` is not a timestamp: '05/01/2024 12:00'"),
        ("2024-13-01T00:00:00Z", "`startTime` is not a timestamp: '2024-13-01T00:00:00Z'"),
        ("2024-05-01T25:00:00Z", "`startTime` is not a timestamp: '2024-05-01T25:00:00Z'"),
        ("2024-05-01", "`startTime` has a date but no time of day: '2024-05-01'"),
        ("NaN", "`startTime` is not a timestamp: 'NaN'"),
        (float("inf"), "`startTime` is not a timestamp: 'inf'"),
        (-5, "`startTime` is not a timestamp: '-5'"),
        ("1e30", "`startTime` is not a timestamp: '1e30'"),
        (True, "`startTime` is not a timestamp: 'True'"),
    ],
)
def test_parse_timestamp_rejects_with_field_and_value(raw: object, reason_part: str) -> None:
    with pytest.raises(RowRejected) as caught:
        parse_timestamp(raw, field="startTime")
    assert caught.value.field == "startTime"
    assert reason_part in caught.value.reason


# --- token counts -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("12", 12),
        (12, 12),
        ("12.0", 12),
        (12.0, 12),
        (Decimal("12.0"), 12),
        (" 7 ", 7),
        ("1e3", 1000),
        ("0", 0),
        (str(MAX_TOKENS_PER_REQUEST), 10_000_000),
        (None, None),
        ("", None),
        ("NULL", None),
    ],
)
def test_parse_token_count_accepts(raw: object, expected: int | None) -> None:
    assert parse_token_count(raw, field="prompt_tokens") == expected


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("12.5", "`prompt_tokens` must be a whole number of tokens, got '12.5'."),
        (Decimal("3.5"), "`prompt_tokens` must be a whole number of tokens, got '3.5'."),
        ("-1", "`prompt_tokens` cannot be negative, got '-1'."),
        ("NaN", "`prompt_tokens` must be a finite number, got 'NaN'."),
        (float("nan"), "`prompt_tokens` must be a finite number, got 'nan'."),
        ("inf", "`prompt_tokens` must be a finite number, got 'inf'."),
        (
            "10000001",
            "`prompt_tokens` is '10000001', above the limit of 10000000 tokens per request.",
        ),
        ("twelve", "`prompt_tokens` is not a number: 'twelve'."),
        (True, "`prompt_tokens` is not a number: 'True'."),
    ],
)
def test_parse_token_count_rejects(raw: object, reason: str) -> None:
    with pytest.raises(RowRejected) as caught:
        parse_token_count(raw, field="prompt_tokens")
    assert caught.value.field == "prompt_tokens"
    assert caught.value.reason == reason


@pytest.mark.parametrize(
    "count", [0, 1, 1200, MAX_TOKENS_PER_REQUEST, MAX_TOKENS_PER_REQUEST + 1, -7]
)
def test_an_int_count_gives_what_its_text_gives(count: int) -> None:
    """Ints take a shorter path (OTLP's intValue); the answer, or the reject, is the same."""

    def outcome(raw: object) -> object:
        try:
            return parse_token_count(raw, field="n")
        except RowRejected as rejected:
            return rejected.reason.replace(f"'{count}'", "<value>")

    assert outcome(count) == outcome(str(count))


@pytest.mark.parametrize(
    "nanos", [1_714_564_800_123_456_789, 1, 946_684_800 * 10**9, 0, 10**19, 10**20, 10**21]
)
def test_int_unix_nanos_give_what_their_text_gives(nanos: int) -> None:
    def outcome(raw: object) -> object:
        try:
            return parse_unix_nanos(raw, field="t")
        except RowRejected as rejected:
            return rejected.reason.replace(f"'{nanos}'", "<value>")

    assert outcome(nanos) == outcome(str(nanos))
    if nanos == 1_714_564_800_123_456_789:
        assert outcome(nanos) == datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, ""),
        ("", ""),
        ("  null ", ""),
        ("None", ""),
        ("NULL", ""),
        (" nulls ", "nulls"),
        (" a b ", "a b"),
        ("none of it", "none of it"),
        (12, "12"),
        (Decimal("1.50"), "1.50"),
    ],
)
def test_text_strips_and_drops_missing_words(raw: object, expected: str) -> None:
    assert text(raw) == expected


# --- cost, booleans, status, JSON text, tags --------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("0.00125", Decimal("0.00125")),
        (0.1, Decimal("0.1")),  # via str(float): not 0.1000000000000000055511151231257827
        (Decimal("0.0042"), Decimal("0.0042")),
        (0, Decimal(0)),
        ("NULL", None),
        ("", None),
    ],
)
def test_parse_cost_accepts(raw: object, expected: Decimal | None) -> None:
    assert parse_cost(raw, field="spend") == expected


def test_parse_cost_keeps_float_text_exactly() -> None:
    assert str(parse_cost(0.1, field="spend")) == "0.1"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("-0.01", "`spend` cannot be negative, got '-0.01'."),
        ("NaN", "`spend` must be a finite amount of money, got 'NaN'."),
        ("$3", "`spend` must be a finite amount of money, got '$3'."),
    ],
)
def test_parse_cost_rejects(raw: object, reason: str) -> None:
    with pytest.raises(RowRejected) as caught:
        parse_cost(raw, field="spend")
    assert caught.value.reason == reason


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("False", False),
        ("yes", True),
        ("n", False),
        ("1", True),
        (0, False),
        (True, True),
        ("", None),
        (None, None),
    ],
)
def test_parse_bool(raw: object, expected: bool | None) -> None:
    assert parse_bool(raw, field="streaming") == expected


def test_parse_bool_rejects_other_words() -> None:
    with pytest.raises(RowRejected) as caught:
        parse_bool("maybe", field="streaming")
    assert caught.value.reason == "`streaming` is not true or false: 'maybe'."


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("success", "success"),
        ("failure", "error"),
        ("FAILED", "error"),
        ("ok", "success"),
        ("", "success"),
        ("200", "success"),
        (429, "error"),
    ],
)
def test_parse_status(raw: object, expected: str) -> None:
    assert parse_status(raw, field="status") == expected


def test_parse_status_rejects_unknown_words() -> None:
    with pytest.raises(RowRejected) as caught:
        parse_status("pending", field="status")
    assert caught.value.reason == "`status` is not a known status (success or error): 'pending'."


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('["workload:a", "env:prod"]', ["workload:a", "env:prod"]),
        ("['workload:a', 'env:prod']", ["workload:a", "env:prod"]),  # Python-style list
        ("workload:a, env:prod", ["workload:a", "env:prod"]),  # comma separated
        (["workload:a", " ", None, 2024], ["workload:a", "2024"]),
        ("[]", []),
        ("", []),
        ("NULL", []),
        (None, []),
    ],
)
def test_parse_tags(raw: object, expected: list[str]) -> None:
    assert parse_tags(raw, field="request_tags") == expected


def test_parse_tags_rejects_an_unreadable_list() -> None:
    with pytest.raises(RowRejected) as caught:
        parse_tags("[workload:a", field="request_tags")
    assert caught.value.reason == "`request_tags` is not a readable list."


def test_parse_json_object_reads_text_and_objects() -> None:
    assert parse_json_object('{"pool": "a", "cost": 0.1}', field="metadata") == {
        "pool": "a",
        "cost": Decimal("0.1"),
    }
    assert parse_json_object({"pool": "a"}, field="metadata") == {"pool": "a"}
    assert parse_json_object("", field="metadata") == {}
    assert parse_json_object("null", field="metadata") == {}


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('{"pool": ', "`metadata` is not valid JSON (Expecting value at character 9)."),
        ("[1, 2]", "`metadata` is not a JSON object."),
    ],
)
def test_parse_json_object_rejects(raw: str, reason: str) -> None:
    with pytest.raises(RowRejected) as caught:
        parse_json_object(raw, field="metadata")
    assert caught.value.reason == reason


# --- build_request ----------------------------------------------------------------------------


def _build(**overrides: object) -> CanonicalRequest:
    values: dict[str, object] = {
        "line": 7,
        "names": SourceFields(),
        "started_at": "2024-05-01T12:00:00Z",
        "ended_at": "2024-05-01T12:00:02Z",
        "first_token_at": "2024-05-01T12:00:00.5Z",
        "model": "gpt-4o",
        "input_tokens": "100",
        "output_tokens": "31",
        "caller": "svc",
    }
    values.update(overrides)
    return build_request(**values)  # type: ignore[arg-type]


def test_build_request_latency_properties() -> None:
    request = _build()
    assert request.latency_ms == 2000.0
    assert request.ttft_ms == 500.0
    # (2000 - 500) / (31 - 1) = 50
    assert request.tpot_ms == 50.0
    assert request.status == "success"
    assert request.cost_usd is None
    assert request.cached_input_tokens == 0
    assert request.workload == "svc"
    assert request.line == 7


def test_tpot_needs_two_output_tokens_and_a_first_token() -> None:
    assert _build(output_tokens="1").tpot_ms is None
    assert _build(first_token_at=None).tpot_ms is None
    assert _build(first_token_at=None).ttft_ms is None


def test_build_request_error_rows_and_embeddings_default_missing_tokens_to_zero() -> None:
    error_row = _build(status="failure", input_tokens="", output_tokens=None)
    assert (error_row.status, error_row.input_tokens, error_row.output_tokens) == ("error", 0, 0)
    embedding = _build(operation="Embedding", output_tokens="", first_token_at=None)
    assert (embedding.operation, embedding.output_tokens) == ("embedding", 0)


@pytest.mark.parametrize(
    ("overrides", "field", "reason"),
    [
        (
            {"started_at": ""},
            "started_at",
            "`started_at` is empty.",
        ),
        (
            {"ended_at": "2024-05-01T11:59:59Z", "first_token_at": None},
            "ended_at",
            "`ended_at` (2024-05-01T11:59:59+00:00) is before `started_at` "
            "(2024-05-01T12:00:00+00:00).",
        ),
        (
            {"first_token_at": "2024-05-01T11:59:00Z"},
            "first_token_at",
            "`first_token_at` (2024-05-01T11:59:00+00:00) is before `started_at`.",
        ),
        (
            {"first_token_at": "2024-05-01T12:00:03Z"},
            "first_token_at",
            "`first_token_at` (2024-05-01T12:00:03+00:00) is after `ended_at`.",
        ),
        (
            {"model": "  "},
            "model",
            "`model` is empty, so the request cannot be priced or grouped.",
        ),
        (
            {"output_tokens": ""},
            "output_tokens",
            "`output_tokens` is empty.",
        ),
        (
            {"cached_input_tokens": "101"},
            "cached_input_tokens",
            "`cached_input_tokens` (101) is more than `input_tokens` (100); input tokens must "
            "include cached ones.",
        ),
    ],
)
def test_build_request_rejects(overrides: dict[str, object], field: str, reason: str) -> None:
    with pytest.raises(RowRejected) as caught:
        _build(**overrides)
    assert caught.value.field == field
    assert caught.value.reason == reason


def test_reject_value_is_truncated_to_200_characters() -> None:
    with pytest.raises(RowRejected) as caught:
        _build(started_at="x" * 500)
    reject = caught.value.to_reject(line=3)
    assert reject.value == "x" * 200
    assert reject.line == 3


# --- reading bytes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "message"),
    [
        (b"", "the file is empty"),
        (b"  \r\n\n", "the file is empty"),
        (
            b"PK\x03\x04\x14\x00\x00\x00",
            "the file is a ZIP archive; upload the CSV or JSON file inside it",
        ),
        (
            b"\x1f\x8b\x08\x00\x00\x00",
            "the file is gzip-compressed; compressed uploads are not accepted, so upload the "
            "uncompressed file (it is never expanded here)",
        ),
        (b"started_at,model\n\xff\xfe", "not valid UTF-8 at byte 17"),
    ],
)
def test_check_head_refuses_unreadable_files(head: bytes, message: str) -> None:
    with pytest.raises(ImportFileError) as caught:
        check_head(head)
    assert str(caught.value) == message


def test_check_head_allows_a_character_cut_at_the_end_of_the_head() -> None:
    check_head("model,é".encode()[:-1])


def test_iter_text_lines_drops_the_bom_and_reports_absolute_byte_offsets() -> None:
    data = "\ufeffa,b\r\nc,d\r\n".encode() + b"e,\xe9\n"
    lines = iter_text_lines(io.BytesIO(data))
    assert next(lines) == "a,b\r\n"
    assert next(lines) == "c,d\r\n"
    # BOM (3) + "a,b\r\n" (5) + "c,d\r\n" (5) + "e," (2) = byte 15
    with pytest.raises(ImportFileError) as caught:
        next(lines)
    assert str(caught.value) == "not valid UTF-8 at byte 15"


def test_read_json_document_reports_truncation_and_syntax_errors() -> None:
    with pytest.raises(ImportFileError) as caught:
        read_json_document(io.BytesIO(b'[\n  {"a": 1},\n  {"a": '))
    assert str(caught.value) == "truncated JSON: the document ends before it closes (line 3)"
    with pytest.raises(ImportFileError) as caught:
        read_json_document(io.BytesIO(b'[\n  {"a": 1} {"a": 2}\n]'))
    assert str(caught.value) == "not valid JSON at line 2 column 12: Expecting ',' delimiter"
