"""LiteLLM exports (CSV, JSON lines, a JSON array) in which one field has the same odd value in
every record, read by `litellm.read` (the columnar paths: the files are over its 64 KiB head)
and by the row path (`litellm.read_rows`), the independent method: the same rows, the same
rejects, or the same refusal of the whole file. A block in which no record has an ordinary
value of a field is what files mixing good and odd records never show."""

from __future__ import annotations

import copy
import csv
import io
import json
from collections.abc import Callable

import pandas as pd
import pytest

from audit_app.ingestion.reading import HEAD_BYTES
from audit_app.ingestion.token_logs import litellm
from tests.support.chunks import collect_chunks

RECORD: dict[str, object] = {
    "request_id": "r",
    "call_type": "acompletion",
    "api_key": "k1",
    "spend": 0.001,
    "total_tokens": 110,
    "prompt_tokens": 100,
    "completion_tokens": 10,
    "startTime": "2025-03-03T00:00:02.063517Z",
    "endTime": "2025-03-03T00:00:06.148850Z",
    "completionStartTime": "2025-03-03T00:00:03.148850Z",
    "model": "gpt-4o-mini",
    "model_group": "gpt-4o-mini",
    "custom_llm_provider": "openai",
    "user": "u1",
    "metadata": {
        "user_api_key_alias": "bot",
        "user_api_key_team_alias": "team-a",
        "usage_object": {"prompt_tokens_details": {"cached_tokens": 5}},
    },
    "request_tags": ["workload:bot", "team:team-a"],
    "team_id": "team-a",
    "end_user": "e1",
    "status": "success",
    "cache_hit": "False",
}
ABSENT = object()
ODD: dict[str, object] = {"absent": ABSENT, "null": None, "empty": "", "[]": [], "text": "abc"}


def _records(field: str, odd: object, count: int) -> list[dict[str, object]]:
    records = []
    for number in range(count):
        record = copy.deepcopy(RECORD)
        second = f"{number // 60 % 60:02d}:{number % 60:02d}"
        record.update(
            request_id=f"r{number}",
            prompt_tokens=100 + number % 7,
            startTime=f"2025-03-03T00:{second}.063517Z",
            endTime=f"2025-03-03T00:{second}.963517Z",
            completionStartTime=f"2025-03-03T00:{second}.963517Z",
        )
        if odd is ABSENT:
            del record[field]
        else:
            record[field] = odd
        records.append(record)
    return records


def _csv(records: list[dict[str, object]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(RECORD))
    for record in records:
        cells = [record.get(name) for name in RECORD]
        writer.writerow(
            ["" if c is None else json.dumps(c) if isinstance(c, dict | list) else c for c in cells]
        )
    return out.getvalue().encode()


FORMATS: dict[str, Callable[[list[dict[str, object]]], bytes]] = {
    "csv": _csv,
    "jsonl": lambda records: "".join(json.dumps(r) + "\n" for r in records).encode(),
    "json array": lambda records: json.dumps(records).encode(),
}


def _outcome(read: Callable[..., object], data: bytes) -> object:
    try:
        frame, rejects, _ = collect_chunks(
            read(io.BytesIO(data), chunk_rows=150), categories_as_text=True
        )
    except Exception as error:  # the same refusal of the whole file is the same outcome
        return f"{type(error).__name__}: {error}"
    return frame, rejects


@pytest.mark.parametrize("odd", list(ODD))
@pytest.mark.parametrize("field", list(RECORD))
@pytest.mark.parametrize("kind", list(FORMATS))
def test_a_field_odd_in_every_record_reads_as_the_row_path_reads_it(
    kind: str, field: str, odd: str
) -> None:
    count = 100
    while len(data := FORMATS[kind](_records(field, ODD[odd], count))) <= HEAD_BYTES:
        count += 100  # over the head: `litellm.read` takes its columnar path
    columnar, rows = _outcome(litellm.read, data), _outcome(litellm.read_rows, data)
    if isinstance(rows, str) or isinstance(columnar, str):
        assert columnar == rows
        return
    assert isinstance(columnar, tuple) and isinstance(rows, tuple)
    pd.testing.assert_frame_equal(columnar[0], rows[0])
    assert columnar[1] == rows[1]
