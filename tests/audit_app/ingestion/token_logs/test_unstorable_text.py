"""Records no database can store, and records from the future, in every token-log format.

A text a record keeps (model, workload, team, end user, caller, provider, operation, pool,
request id) holding a NUL character or a lone surrogate is refused per record with a reject
naming its line and field; a record dated more than a day ahead is refused the same way. The
rows around it are read as usual, by the row path and by the columnar fast paths alike.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from audit_app.ingestion.reading import (
    RowReject,
    RowRejected,
    check_storable,
    inert_text,
    unstorable_reason,
)
from audit_app.ingestion.token_logs import (
    generic,
    litellm,
    litellm_payload,
    otel,
    otel_columnar,
    otel_fields,
    read_requests,
)
from audit_app.ingestion.token_logs.json_columnar import read_jsonl_columnar
from audit_app.ingestion.token_logs.litellm_columnar import read_csv_columnar
from tests.support.chunks import collect_chunks

NUL = "bad\x00name"
SURROGATE = "bad\ud800name"
START = datetime(2024, 5, 1, 8, 0, tzinfo=UTC)
ISO = "%Y-%m-%dT%H:%M:%S.%fZ"


def test_the_unstorable_texts_are_named_and_written_inertly() -> None:
    assert unstorable_reason("plain é 😀") is None
    assert unstorable_reason(NUL) == "contains a NUL character (U+0000)"
    assert unstorable_reason("x\udfff") == (
        "contains a lone surrogate (U+DFFF), which is not Unicode"
    )
    assert inert_text(NUL) == "bad\\u0000name"
    assert inert_text(SURROGATE) == "bad\\ud800name"
    assert inert_text("é") == "é"
    inert_text(SURROGATE).encode("utf-8")  # storable now
    with pytest.raises(RowRejected) as refused:
        check_storable(SURROGATE, field="model")
    reject = refused.value.to_reject(line=4)
    assert reject == RowReject(
        line=4,
        field="model",
        value="bad\\ud800name",
        reason="`model` contains a lone surrogate (U+D800), which is not Unicode; such text "
        "cannot be stored, so the record is refused.",
    )
    assert RowReject(line=1, field="a\x00", value=NUL, reason=SURROGATE).as_dict() == {
        "line": 1,
        "field": "a\\u0000",
        "value": "bad\\u0000name",
        "reason": "bad\\ud800name",
    }


# --- LiteLLM spend logs ---------------------------------------------------------------------


def _litellm(number: int, **changes: Any) -> dict[str, Any]:
    started = START + timedelta(minutes=number)
    record: dict[str, Any] = {
        "request_id": f"req-{number}",
        "call_type": "acompletion",
        "api_key": "88dc29a1",
        "spend": 0.001,
        "total_tokens": 150,
        "prompt_tokens": 100,
        "completion_tokens": 50,
        "startTime": started.strftime(ISO),
        "endTime": (started + timedelta(seconds=2)).strftime(ISO),
        "model": "gpt-4o-mini",
        "custom_llm_provider": "openai",
        "metadata": {"user_api_key_alias": "support-bot", "user_api_key_team_alias": "support"},
        "request_tags": [],
        "end_user": "cust-42",
        "status": "success",
    }
    record.update(changes)
    return record


# (name, change to the middle record, the field the reject names, what it says)
LITELLM_VARIANTS: list[tuple[str, dict[str, Any], str, str]] = [
    ("nul-model", {"model": NUL}, "model", "NUL"),
    ("nul-workload", {"request_tags": [f"workload:{NUL}"]}, "workload", "NUL"),
    ("nul-caller", {"metadata": {"user_api_key_alias": NUL}}, "caller", "NUL"),
    ("nul-id", {"request_id": NUL}, "request_id", "NUL"),
    ("nul-end-user", {"end_user": NUL}, "end_user", "NUL"),
    ("nul-team", {"metadata": {"user_api_key_team_alias": NUL}}, "team", "NUL"),
    ("surrogate-model", {"model": SURROGATE}, "model", "lone surrogate"),
    ("surrogate-workload", {"request_tags": [f"workload:{SURROGATE}"]}, "workload", "lone"),
    ("surrogate-caller", {"metadata": {"user_api_key_alias": SURROGATE}}, "caller", "lone"),
    ("surrogate-id", {"request_id": SURROGATE}, "request_id", "lone surrogate"),
    ("surrogate-end-user", {"end_user": SURROGATE}, "end_user", "lone surrogate"),
]


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _csv(records: list[dict[str, Any]]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(records[0]), lineterminator="\n")
    writer.writeheader()
    for record in records:
        # Nested values are JSON in a cell; a NUL or lone surrogate can only be escaped there.
        writer.writerow(
            {k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in record.items()}
        )
    return out.getvalue().encode()


Reader = Callable[[bytes], tuple[int, list[RowReject]]]


def _counted(chunks: Any) -> tuple[int, list[RowReject]]:
    frame, rejects, _ = collect_chunks(chunks, categories_as_text=True)
    return len(frame), sorted(rejects, key=lambda r: r.line)


READERS: dict[str, tuple[Callable[[list[dict[str, Any]]], bytes], Reader, int]] = {
    # (writer, reader, line of the second record)
    "jsonl-auto": (_jsonl, lambda d: _counted(read_requests(io.BytesIO(d))), 2),
    "jsonl-rows": (_jsonl, lambda d: _counted(litellm.read_rows(io.BytesIO(d), chunk_rows=9)), 2),
    "jsonl-columnar": (
        _jsonl,
        lambda d: _counted(read_jsonl_columnar(io.BytesIO(d), chunk_rows=9)),
        2,
    ),
    "json-array": (
        lambda rs: json.dumps(rs, indent=None).replace("}, {", "},\n{").encode(),
        lambda d: _counted(read_requests(io.BytesIO(d))),
        2,
    ),
    "csv-auto": (_csv, lambda d: _counted(read_requests(io.BytesIO(d))), 3),
    "csv-columnar": (_csv, lambda d: _counted(read_csv_columnar(io.BytesIO(d), chunk_rows=9)), 3),
}


# A CSV cell holds no NUL (the file is refused as binary) nor a surrogate (not UTF-8): only the
# JSON in its metadata and tags cells can escape one.
LITELLM_CASES = [
    pytest.param(reader, *variant, id=f"{reader}-{variant[0]}")
    for reader in READERS
    for variant in LITELLM_VARIANTS
    if not reader.startswith("csv") or set(variant[1]) <= {"metadata", "request_tags"}
]


@pytest.mark.parametrize(("reader", "variant", "change", "field", "says"), LITELLM_CASES)
def test_a_litellm_record_with_unstorable_text_is_refused_alone(
    reader: str, variant: str, change: dict[str, Any], field: str, says: str
) -> None:
    write, read, line = READERS[reader]
    data = write([_litellm(1), _litellm(2, **change), _litellm(3)])
    accepted, rejects = read(data)
    assert accepted == 2
    assert [(r.line, r.field) for r in rejects] == [(line, field)]
    assert says in rejects[0].reason
    assert rejects[0].value == inert_text(NUL if "nul" in variant else SURROGATE)


def test_a_litellm_csv_holding_a_nul_byte_is_refused_whole_with_a_sentence() -> None:
    data = _csv([_litellm(1), _litellm(2, model=NUL)])
    with pytest.raises(Exception, match="NUL byte at byte"):
        _counted(read_requests(io.BytesIO(data)))


# --- OpenTelemetry, LiteLLM callback payloads and the generic format ----------------------------


def _span(number: int, *, resource: dict[str, str], **attributes: Any) -> dict[str, Any]:
    start = int((START + timedelta(minutes=number)).timestamp()) * 10**9
    values = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
        **attributes,
    }
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [
                        {"key": k, "value": {"stringValue": v}} for k, v in resource.items()
                    ]
                },
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": f"{number:032x}",
                                "spanId": f"{number:016x}",
                                "startTimeUnixNano": str(start),
                                "endTimeUnixNano": str(start + 10**9),
                                "attributes": [
                                    {"key": k, "value": _any(v)} for k, v in values.items()
                                ],
                            }
                        ]
                    }
                ],
            }
        ]
    }


def _any(value: Any) -> dict[str, Any]:
    return {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}


OTEL_VARIANTS: list[tuple[str, dict[str, Any], dict[str, str], str]] = [
    ("nul-model", {"gen_ai.request.model": NUL}, {}, otel_fields.SOURCE_FIELDS.model),
    ("nul-workload", {"workload": NUL}, {}, "workload"),
    ("nul-service-name", {}, {"service.name": NUL}, "caller"),
    ("nul-end-user", {"user.id": NUL}, {}, "end_user"),
    ("surrogate-workload", {"workload": SURROGATE}, {}, "workload"),
    ("surrogate-service-name", {}, {"service.name": SURROGATE}, "caller"),
]


def _read_otel(read: str, data: bytes) -> tuple[int, list[RowReject]]:
    stream = io.BytesIO(data)
    if read == "auto":
        return _counted(read_requests(stream))
    if read == "rows":
        return _counted(otel.read_rows(stream, chunk_rows=9))
    return _counted(otel_columnar.read_jsonl_columnar(stream, chunk_rows=9))


@pytest.mark.parametrize("read", ["auto", "rows", "columnar"])
@pytest.mark.parametrize(
    ("variant", "attributes", "resource", "field"), OTEL_VARIANTS, ids=[v[0] for v in OTEL_VARIANTS]
)
def test_an_otel_span_with_unstorable_text_is_refused_alone(
    read: str, variant: str, attributes: dict[str, Any], resource: dict[str, str], field: str
) -> None:
    spans = [
        _span(1, resource={"service.name": "ok"}),
        _span(2, resource={"service.name": "ok", **resource}, **attributes),
        _span(3, resource={"service.name": "ok"}),
    ]
    accepted, rejects = _read_otel(read, _jsonl(spans))
    assert accepted == 2
    assert [(r.line, r.field) for r in rejects] == [(2, field)]
    assert rejects[0].value == inert_text(NUL if "nul" in variant else SURROGATE)


def test_a_litellm_callback_file_and_a_generic_log_refuse_the_same_way() -> None:
    payloads = [
        {**_payload(1), "id": NUL},
        _payload(2),
        {**_payload(3), "end_user": SURROGATE},
    ]
    accepted, rejects = _counted(litellm_payload.read(io.BytesIO(_jsonl(payloads)), chunk_rows=9))
    assert accepted == 1
    assert [(r.line, r.field) for r in rejects] == [(1, "request_id"), (3, "end_user")]
    rows = [
        {
            "started_at": "2024-05-01T08:00:00Z",
            "ended_at": "2024-05-01T08:00:01Z",
            "model": "m",
            "input_tokens": 1,
            "output_tokens": 1,
            "workload": w,
        }
        for w in ("ok", NUL, SURROGATE, "fine")
    ]
    accepted, rejects = _counted(generic.read(io.BytesIO(_jsonl(rows)), chunk_rows=9))
    assert accepted == 2
    assert [(r.line, r.field) for r in rejects] == [(2, "workload"), (3, "workload")]


def _payload(number: int) -> dict[str, Any]:
    started = (START + timedelta(minutes=number)).timestamp()
    return {
        "id": f"call-{number}",
        "call_type": "acompletion",
        "model": "gpt-4o-mini",
        "custom_llm_provider": "openai",
        "startTime": started,
        "endTime": started + 1.5,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "response_cost": 0.0001,
        "status": "success",
        "end_user": "cust-1",
        "metadata": {"user_api_key_alias": "svc"},
    }


# --- Dated in the future --------------------------------------------------------------------


@pytest.mark.parametrize("reader", ["jsonl-auto", "jsonl-rows", "jsonl-columnar", "csv-auto"])
def test_a_record_more_than_a_day_ahead_is_refused_and_one_within_the_day_is_kept(
    reader: str,
) -> None:
    now = datetime.now(UTC)
    ahead = now + timedelta(days=2)
    soon = now + timedelta(hours=20)
    far = datetime(2099, 6, 1, tzinfo=UTC)
    records = [
        _litellm(1),
        _litellm(2, startTime=ahead.strftime(ISO), endTime=ahead.strftime(ISO)),
        _litellm(3, startTime=soon.strftime(ISO), endTime=soon.strftime(ISO)),
        _litellm(4, endTime=far.strftime(ISO)),
    ]
    write, read, line = READERS[reader]
    accepted, rejects = read(write(records))
    assert accepted == 2
    assert [(r.line, r.field) for r in rejects] == [(line, "startTime"), (line + 2, "endTime")]
    assert rejects[0].reason == (
        f"`startTime` ({ahead.isoformat()}) is more than a day in the future."
    )
    assert rejects[1].reason == f"`endTime` ({far.isoformat()}) is more than a day in the future."


@pytest.mark.parametrize("read", ["auto", "rows", "columnar"])
def test_an_otel_span_from_2099_is_refused(read: str) -> None:
    span = _span(1, resource={"service.name": "ok"})
    inner = span["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    start = int(datetime(2099, 6, 1, tzinfo=UTC).timestamp()) * 10**9
    inner["startTimeUnixNano"], inner["endTimeUnixNano"] = str(start), str(start + 10**9)
    data = _jsonl([_span(2, resource={"service.name": "ok"}), span])
    accepted, rejects = _read_otel(read, data)
    assert accepted == 1
    assert [(r.line, r.field) for r in rejects] == [(2, "startTimeUnixNano")]
    assert "more than a day in the future" in rejects[0].reason


@pytest.mark.django_db
def test_an_upload_holding_poison_records_lands_the_others_with_rejects() -> None:
    """Before, one such record failed the whole file with the database's error (PostgreSQL)."""
    from audit_app.ingestion.ingest import upload_ingest
    from audit_app.ingestion.uploads import upload_create
    from audit_app.models import HourlyRollup, Upload

    data = _jsonl(
        [
            _litellm(1),
            _litellm(2, model=NUL),
            _litellm(3, request_tags=[f"workload:{SURROGATE}"]),
            _litellm(4, end_user=NUL),
            _litellm(5),
        ]
    )
    upload = upload_create(source=io.BytesIO(data), original_name="spend.jsonl", enqueue=False)
    done = upload_ingest(upload_id=upload.pk)
    assert done.status == Upload.Status.SUCCEEDED, done.error
    assert (done.rows_accepted, done.rows_rejected) == (2, 3)
    assert [(r["line"], r["field"], r["value"]) for r in done.rejects] == [
        (2, "model", "bad\\u0000name"),
        (3, "workload", "bad\\ud800name"),
        (4, "end_user", "bad\\u0000name"),
    ]
    assert sum(HourlyRollup.objects.filter(upload=done).values_list("requests", flat=True)) == 2
