"""Ingest fan-out: a file cut into parts lands exactly what one pass over it lands.

Each case ingests the same bytes twice: once in one pass (`upload_ingest`), once
through the `audit_app.ingest_upload` task with a tiny `INGEST_FANOUT_MIN_BYTES` (the test
settings run tasks eagerly, so the part tasks run inline and the last one lands). Rollups, day
shapes, totals, counts and rejects must be identical; histogram sums are compared to 1e-9
relative because a float sum depends on how rows were grouped into chunks (counts and bins
are exact), as it already does between chunk sizes of one pass.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.test import override_settings

from audit_app.ingestion import fanout as ingest_fanout
from audit_app.ingestion import fanout_parts, split
from audit_app.ingestion.histograms import LatencyHistogram
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import DailyRollup, HourlyRollup, Upload, WorkloadDay
from audit_app.tasks import ingest_upload
from tests.audit_app.ingestion.ingest_samples import SAMPLE_CSV
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db

FIXTURES = FIXTURES_DIR
PART_COUNTS = (1, 2, 3, 7)
UPLOAD_FIELDS = (
    "status",
    "format",
    "error",
    "rows_read",
    "rows_accepted",
    "rows_rejected",
    "rejects",
    "requests",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "logged_cost_usd",
    "bytes_read",
)


# --- Files -------------------------------------------------------------------------------------


def _litellm_csv(
    *, rows: int = 1200, crlf: bool = False, bom: bool = False, multiline: bool = True
) -> bytes:
    """The LiteLLM fixture's rows over several days, with quoted values holding newlines and
    commas (every fifth row, unless not `multiline`) and a few malformed rows; about 300 bytes
    a row."""
    text = (FIXTURES / "litellm" / "spend_logs.csv").read_bytes().decode()
    if not multiline:  # the fixture's one metadata value on two lines, on one
        text = text.replace(',\n ""user_api_key_alias""', ', ""user_api_key_alias""')
    lines = text.splitlines()
    header, body = lines[0], lines[1:]
    out = [header]
    for i in range(rows):
        row = body[i % len(body)].replace("req-0", f"r{i}-", 1)
        row = row.replace("2024-05-01", f"2024-05-{1 + i % 9:02d}")
        if multiline and i % 5 == 0:
            # `user` (the end user) quoted, with a newline, a comma and a doubled quote inside
            row = row.replace(",u-1,", ',"u-1\nsecond line, with ""comma""",', 1)
            row = row.replace(",,success", ',"multi\nline, id",success', 1)
        if i % 97 == 13:
            row = row + ",one-field-too-many"
        out.append(row)
    newline = "\r\n" if crlf else "\n"
    text = newline.join(out) + newline
    if crlf:
        # A newline inside a quoted value stays as written (csv keeps it); make it CRLF too
        text = text.replace("u-1\nsecond", "u-1\r\nsecond")
    data = text.encode()
    return (b"\xef\xbb\xbf" + data) if bom else data


def _generic_csv(rows: int = 900) -> bytes:
    lines = SAMPLE_CSV.decode().splitlines()
    header, body = lines[0], lines[1:]
    out = [header]
    for i in range(rows):
        row = body[i % len(body)].replace(",r", f",g{i}-", 1)
        row = row.replace("2026-11-02", f"2026-11-{2 + i % 6:02d}")
        if i % 7 == 3:
            row = row.replace(",chat,web,", ',chat,"web\nteam, two",', 1)
        out.append(row)
        if i % 50 == 10:
            out.append("")  # blank lines are skipped but still counted as lines
    return ("\n".join(out) + "\n").encode()


def _jsonl(rows: int = 700) -> bytes:
    lines = (FIXTURES / "generic" / "requests.jsonl").read_bytes().decode().splitlines()
    out = []
    for i in range(rows):
        out.append(lines[i % len(lines)].replace('"c-1"', f'"c{i}"'))
        if i % 40 == 7:
            out.append("")
        if i % 60 == 21:
            out.append('{"started_at": "2024-05-03T10:00:00Z", broken')
        if i % 90 == 44:
            out.append("[1, 2]")
    return ("\n".join(out) + "\n").encode()


def _litellm_jsonl(rows: int = 400) -> bytes:
    lines = (FIXTURES / "litellm" / "spend_logs.jsonl").read_bytes().decode().splitlines()
    return ("\n".join(lines[i % len(lines)] for i in range(rows)) + "\n").encode()


CASES = {
    "litellm_csv": lambda: _litellm_csv(),
    "litellm_csv_crlf_bom": lambda: _litellm_csv(crlf=True, bom=True),
    "litellm_csv_columnar": lambda: _litellm_csv(rows=2400),
    "litellm_csv_one_line_records": lambda: _litellm_csv(rows=2400, multiline=False),
    "generic_csv": lambda: _generic_csv(),
    "generic_jsonl": lambda: _jsonl(),
    "litellm_jsonl": lambda: _litellm_jsonl(),
}


# --- Helpers -----------------------------------------------------------------------------------


def _create(content: bytes, name: str = "log.csv") -> Upload:
    return upload_create(source=io.BytesIO(content), original_name=name, enqueue=False)


def _split_histogram(value: Any) -> tuple[Any, float]:
    """A stored histogram (JSON dict, or the compact binary form) without its float sum."""
    if not value:
        return {}, 0.0
    if isinstance(value, bytes | memoryview):
        value = LatencyHistogram.from_bytes(bytes(value)).to_json()
    rest = dict(value)
    return rest, float(rest.pop("sum"))


def _snapshot(upload: Upload) -> dict[str, Any]:
    upload.refresh_from_db()
    tables: dict[str, Any] = {}
    sums: list[float] = []
    for model in (HourlyRollup, DailyRollup, WorkloadDay):
        rows = []
        for row in model.objects.filter(upload=upload).values():
            row.pop("id")
            row.pop("upload_id")
            for name in ("ttft_histogram", "latency_histogram", "tpot_histogram"):
                if name in row:
                    row[name], total = _split_histogram(row[name])
                    sums.append(total)
            rows.append(row)
        rows.sort(key=repr)
        tables[model.__name__] = rows
    return {
        "upload": {name: getattr(upload, name) for name in UPLOAD_FIELDS},
        "tables": tables,
        "sums": sorted(sums),
    }


def _assert_same(fanned: dict[str, Any], single: dict[str, Any]) -> None:
    assert fanned["upload"] == single["upload"]
    for name, rows in single["tables"].items():
        assert fanned["tables"][name] == rows, name
    assert len(fanned["sums"]) == len(single["sums"])
    for a, b in zip(fanned["sums"], single["sums"], strict=True):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _single_pass(content: bytes, name: str) -> dict[str, Any]:
    upload = upload_ingest(upload_id=_create(content, name).pk)
    snapshot = _snapshot(upload)
    Upload.objects.filter(pk=upload.pk).delete()  # the same bytes are refused twice
    return snapshot


@pytest.fixture
def saved_parts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(upload, part index) of every part result stored."""
    saved: list[tuple[int, int]] = []
    original = fanout_parts.save_part

    def spy(upload_id: int, index: int, result: fanout_parts.PartResult) -> None:
        saved.append((upload_id, index))
        original(upload_id, index, result)

    monkeypatch.setattr(fanout_parts, "save_part", spy)
    return saved


@pytest.fixture
def cuts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """How each plan was cut, in order: "targets", "scan" (the file's first bytes hold a quoted
    value spanning lines) or "scan again" (a cut by targets fell inside such a value)."""
    seen: list[str] = []
    queue_parts = ingest_fanout._queue_parts
    cut_again = ingest_fanout._cut_again

    def spy_queue(*args: Any, scanned: bool, **kwargs: Any) -> None:
        if not scanned:
            seen.append("targets")
        elif not seen or seen[-1] != "again":
            seen.append("scan")
        else:
            seen[-1] = "scan again"
        queue_parts(*args, scanned=scanned, **kwargs)

    def spy_again(*args: Any, **kwargs: Any) -> None:
        seen.append("again")
        cut_again(*args, **kwargs)

    monkeypatch.setattr(ingest_fanout, "_queue_parts", spy_queue)
    monkeypatch.setattr(ingest_fanout, "_cut_again", spy_again)
    return seen


def _no_part_files(upload_id: int) -> bool:
    directory = f"{fanout_parts.PARTS_DIR}/{upload_id}"
    if not default_storage.exists(directory):
        return True
    return default_storage.listdir(directory) == ([], [])


# --- Exactness ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sample", ["first bytes sampled", "no sample"])
@pytest.mark.parametrize("case", list(CASES))
def test_fanned_out_ingest_lands_exactly_what_one_pass_lands(
    case: str,
    sample: str,
    saved_parts: list[tuple[int, int]],
    cuts: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With "no sample", a CSV is always cut by targets first, so where a cut falls inside a
    quoted value the landing part must notice and cut the file again by a scan."""
    if sample == "no sample":
        monkeypatch.setattr(split, "QUOTED_NEWLINE_SAMPLE_BYTES", 0)
    content = CASES[case]()
    name = "log.jsonl" if "jsonl" in case else "log.csv"
    multiline_csv = name == "log.csv" and case != "litellm_csv_one_line_records"
    single = _single_pass(content, name)
    assert single["upload"]["status"] == Upload.Status.SUCCEEDED
    assert single["upload"]["rows_read"] > 300
    assert single["upload"]["rows_rejected"] > 0  # so line numbers of later parts are checked
    for parts in PART_COUNTS:
        saved_parts.clear()
        cuts.clear()
        with override_settings(INGEST_FANOUT_MIN_BYTES=1, INGEST_FANOUT_PARTS=parts):
            upload = _create(content, name)
            ingest_upload.delay(upload.pk)  # eager: the parts run inline
        if len(cuts) == 1:  # one cut: every part stored once
            assert sorted(index for _, index in saved_parts) == list(range(parts)), parts
        if multiline_csv and sample == "first bytes sampled":
            assert cuts == ["scan"], parts
        elif multiline_csv:
            assert cuts in (["targets"], ["targets", "scan again"]), parts
        else:
            assert cuts == ["targets"], parts
        _assert_same(_snapshot(upload), single)
        assert _no_part_files(upload.pk)
        Upload.objects.filter(pk=upload.pk).delete()


def test_a_cut_inside_a_quoted_value_is_noticed_and_the_file_cut_again(
    cuts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the sample, at least one of the part counts tested cuts inside a quoted value
    (see the next test), and the upload still lands what one pass lands."""
    monkeypatch.setattr(split, "QUOTED_NEWLINE_SAMPLE_BYTES", 0)
    content = _litellm_csv(crlf=True, bom=True)
    single = _single_pass(content, "log.csv")
    seen = []
    for parts in PART_COUNTS:
        cuts.clear()
        with override_settings(INGEST_FANOUT_MIN_BYTES=1, INGEST_FANOUT_PARTS=parts):
            upload = _create(content)
            ingest_upload.delay(upload.pk)
        seen.append(tuple(cuts))
        _assert_same(_snapshot(upload), single)
        Upload.objects.filter(pk=upload.pk).delete()
    assert ("targets", "scan again") in seen, seen


def test_some_split_points_fall_inside_quoted_values() -> None:
    """The LiteLLM case really needs the quote parity: a plain "next newline" would cut
    inside a quoted value at some of the part counts tested."""
    content = _litellm_csv(crlf=True, bom=True)
    stream = io.BytesIO(content)
    layout = split.find_layout(stream, kind=split.CSV)
    assert layout is not None
    moved = 0
    for parts in PART_COUNTS:
        planned = split.plan_parts(stream, size=len(content), parts=parts, layout=layout)
        targets = split.part_targets(size=len(content), parts=parts, layout=layout)
        for part in planned[1:]:
            target = max(t for t in targets if t <= part.start)
            naive = content.index(b"\n", target - 1) + 1
            moved += naive != part.start
    assert moved > 0


def test_many_parts_shrink_along_the_file_and_few_are_equal() -> None:
    layout = split.Layout(kind=split.CSV, prefix_end=100, prefix_lines=1)
    # 8 parts of a 1,600-byte body: weights 21, 19, ..., 7 (1.5x to 0.5x the average of 200).
    cuts = split.part_targets(size=1700, parts=8, layout=layout)
    sizes = [b - a for a, b in zip([100, *cuts], [*cuts, 1700], strict=True)]
    assert sizes == [300, 271, 243, 214, 186, 157, 129, 100]
    assert sizes == sorted(sizes, reverse=True) and sum(sizes) == 1600
    # Below GUIDED_MIN_PARTS, equal parts: with two workers each may get just one.
    assert split.part_targets(size=1700, parts=2, layout=layout) == [900]
    assert split.part_targets(size=1700, parts=1, layout=layout) == []


def test_the_cli_and_other_callers_keep_one_pass(saved_parts: list[tuple[int, int]]) -> None:
    with override_settings(INGEST_FANOUT_MIN_BYTES=1, INGEST_FANOUT_PARTS=3):
        upload = upload_ingest(upload_id=_create(_generic_csv()).pk)
    assert upload.status == Upload.Status.SUCCEEDED
    assert saved_parts == []


def test_json_documents_and_otel_are_not_split(saved_parts: list[tuple[int, int]]) -> None:
    with override_settings(INGEST_FANOUT_MIN_BYTES=1, INGEST_FANOUT_PARTS=3):
        for path in (FIXTURES / "litellm" / "spend_logs.json", *(FIXTURES / "otel").iterdir()):
            upload = _create(path.read_bytes(), path.name)
            ingest_upload.delay(upload.pk)
            upload.refresh_from_db()
            assert upload.status in (Upload.Status.SUCCEEDED, Upload.Status.FAILED)
    assert saved_parts == []


def test_small_files_are_not_split(saved_parts: list[tuple[int, int]]) -> None:
    with override_settings(INGEST_FANOUT_MIN_BYTES=10**9, INGEST_FANOUT_PARTS=3):
        upload = _create(_generic_csv())
        ingest_upload.delay(upload.pk)
    upload.refresh_from_db()
    assert upload.status == Upload.Status.SUCCEEDED
    assert saved_parts == []


# --- Redelivery and failure --------------------------------------------------------------------


def test_a_redelivered_part_does_not_count_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    content = _litellm_csv()
    single = _single_pass(content, "log.csv")
    queued: list[tuple[int, dict[str, Any]]] = []
    monkeypatch.setattr(
        "audit_app.tasks.ingest_part.apply_async",
        lambda args, **options: queued.append(tuple(args)),
    )
    with override_settings(INGEST_FANOUT_MIN_BYTES=1, INGEST_FANOUT_PARTS=3):
        upload = _create(content)
        ingest_upload.delay(upload.pk)
    assert len(queued) == 3
    assert Upload.objects.get(pk=upload.pk).status == Upload.Status.RUNNING
    (_, first), (_, second), (_, third) = queued
    assert ingest_fanout.part_ingest(upload_id=upload.pk, spec=first) == "stored"
    assert ingest_fanout.part_ingest(upload_id=upload.pk, spec=first) == "stored"  # redelivered
    assert ingest_fanout.part_ingest(upload_id=upload.pk, spec=third) == "stored"
    assert ingest_fanout.part_ingest(upload_id=upload.pk, spec=second) == "landed"
    # Delivered again after the upload landed: nothing changes, nothing is left behind.
    assert ingest_fanout.part_ingest(upload_id=upload.pk, spec=second) == "skipped"
    assert ingest_fanout.part_ingest(upload_id=upload.pk, spec=first) == "skipped"
    _assert_same(_snapshot(upload), single)
    assert _no_part_files(upload.pk)


def test_a_part_that_cannot_be_read_fails_the_upload_like_one_pass() -> None:
    content = bytearray(_generic_csv())
    bad_at = len(content) * 2 // 3
    bad_at = content.index(b"\n", bad_at) + 5
    content[bad_at] = 0xFF  # invalid UTF-8 deep in the file
    single = _single_pass(bytes(content), "log.csv")
    assert single["upload"]["status"] == Upload.Status.FAILED
    for parts in (2, 3):
        with override_settings(INGEST_FANOUT_MIN_BYTES=1, INGEST_FANOUT_PARTS=parts):
            upload = _create(bytes(content))
            ingest_upload.delay(upload.pk)
        upload.refresh_from_db()
        assert upload.status == Upload.Status.FAILED
        assert upload.error == single["upload"]["error"]
        assert not HourlyRollup.objects.filter(upload=upload).exists()
        assert _no_part_files(upload.pk)
        Upload.objects.filter(pk=upload.pk).delete()


# --- The boundary finder -----------------------------------------------------------------------


def _boundaries(content: bytes, targets: list[int], kind: str, block: int) -> list[tuple[int, int]]:
    return split.find_boundaries(
        io.BytesIO(content), size=len(content), targets=targets, kind=kind, block_bytes=block
    )


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, 1 << 20])
def test_boundary_finder_counts_quote_parity_and_newlines(block: int) -> None:
    content = b'h1,h2\na,"x\ny"\n"p""\nq",r\nlast,1\n'
    starts = [0, 6, 14, 24]  # where the records begin
    assert [content[s - 1 : s] for s in starts[1:]] == [b"\n"] * 3
    every = list(range(1, len(content)))
    cuts = _boundaries(content, every, split.CSV, block)
    assert cuts == [(6, 1), (14, 3), (24, 5)]
    # A target inside a quoted value moves to the end of its record.
    assert _boundaries(content, [9], split.CSV, block) == [(14, 3)]
    assert _boundaries(content, [17, 19], split.CSV, block) == [(24, 5)]
    # A target exactly at a record start stays there.
    assert _boundaries(content, [14], split.CSV, block) == [(14, 3)]
    # JSONL: every newline ends a record, quotes or not.
    assert _boundaries(content, [9], split.JSONL, block) == [(11, 2)]
    # Nothing at or past the last record's end, nothing for targets out of range.
    assert _boundaries(content, [25, 0, len(content)], split.CSV, block) == []


def test_boundary_finder_matches_the_csv_module_on_a_realistic_file() -> None:
    import csv

    content = _litellm_csv(rows=300, crlf=True, bom=True)
    text = content.decode("utf-8-sig")
    record_ends = set()
    reader = csv.reader(io.StringIO(text, newline=""))
    offset_of_line = [0]
    for line in content.splitlines(keepends=True):
        offset_of_line.append(offset_of_line[-1] + len(line))
    for _ in reader:
        record_ends.add(offset_of_line[reader.line_num])
    cuts = _boundaries(content, list(range(1, len(content))), split.CSV, 4096)
    assert {offset for offset, _ in cuts} == record_ends - {len(content)}
    for offset, lines in cuts:
        assert lines == content.count(b"\n", 0, offset)


def test_a_part_starts_after_the_first_newline_at_or_after_its_target() -> None:
    content = b'h1,h2\na,"x\ny"\n"p""\nq",r\nlast,1'
    layout = split.Layout(kind=split.CSV, prefix_end=6, prefix_lines=1)
    stream = io.BytesIO(content)

    def start(target: int) -> int:
        return split.record_start(stream, target, size=len(content), layout=layout)

    assert start(0) == 0
    # Never inside the prefix: the first cut after it ends the first body line.
    assert [start(t) for t in (1, 5, 6, 7)] == [11, 11, 11, 11]
    # A record start maps to itself (a cut found by a scan is kept); newlines alone decide,
    # so a target in a quoted value stops at the newline inside it (the merge checks parity).
    assert [start(t) for t in (11, 12, 14, 15, 19)] == [11, 14, 14, 19, 19]
    assert [start(t) for t in (20, 24)] == [24, 24]
    assert [start(t) for t in (25, len(content))] == [len(content)] * 2  # no newline left


def test_counted_parts_count_each_byte_once_however_the_reader_seeks() -> None:
    content = _litellm_csv(rows=400)
    layout = split.find_layout(io.BytesIO(content), kind=split.CSV)
    assert layout is not None
    source = io.BytesIO(content)
    a = split.record_start(source, len(content) // 3, size=len(content), layout=layout)
    b = split.record_start(source, 2 * len(content) // 3, size=len(content), layout=layout)
    for start, end in ((0, a), (a, b), (b, len(content))):
        part = split.Part(index=int(start > 0), start=start, end=end, lines_before=0)
        expected = split.Counts(
            newlines=content.count(b"\n", start, end), quotes=content.count(b'"', start, end)
        )
        # Read it all, twice over with seeks back; read half; read nothing.
        counted = split.CountedPart(source, part=part, layout=layout)
        counted.stream.read(1000)
        counted.stream.seek(10)
        counted.stream.read()
        counted.stream.seek(0)
        counted.stream.read()
        assert counted.counts() == expected
        counted = split.CountedPart(source, part=part, layout=layout)
        counted.stream.read((end - start) // 2)
        assert counted.counts() == expected
        assert split.CountedPart(source, part=part, layout=layout).counts() == expected


def test_lines_before_each_part_and_cuts_inside_quoted_values() -> None:
    counts = [split.Counts(newlines=5, quotes=4), split.Counts(newlines=3, quotes=2)]
    last = split.Counts(newlines=1, quotes=0)
    assert split.lines_before_parts([*counts, last], kind=split.CSV) == [0, 5, 8]
    odd = [split.Counts(newlines=5, quotes=3), split.Counts(newlines=3, quotes=1), last]
    assert split.lines_before_parts(odd, kind=split.CSV) is None
    assert split.lines_before_parts(odd, kind=split.JSONL) == [0, 5, 8]  # quotes mean nothing
    # An odd count in the last part only: no cut follows it.
    assert split.lines_before_parts([*counts, odd[0]], kind=split.CSV) == [0, 5, 8]


def test_quoted_newlines_in_the_first_bytes_are_noticed() -> None:
    layout = split.Layout(kind=split.CSV, prefix_end=6, prefix_lines=1)
    content = b'h1,h2\na,"x,""y"""\nb,c\n"p\nq",r\n'
    stream = io.BytesIO(content)
    assert split.quoted_newline_near_start(stream, layout=layout)
    assert not split.quoted_newline_near_start(stream, layout=layout, sample_bytes=16)
    assert not split.quoted_newline_near_start(stream, layout=layout, sample_bytes=0)
    jsonl = split.Layout(kind=split.JSONL, prefix_end=6, prefix_lines=1)
    assert not split.quoted_newline_near_start(stream, layout=jsonl)


def test_a_part_of_an_earlier_cut_is_not_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    """A part of the cut by targets delivered again after the file was cut again by a scan
    does nothing: its file would take the place of the new cut's part of the same index."""
    monkeypatch.setattr(split, "QUOTED_NEWLINE_SAMPLE_BYTES", 0)
    content = _litellm_csv()
    single = _single_pass(content, "log.csv")
    queued: list[dict[str, Any]] = []
    monkeypatch.setattr(
        "audit_app.tasks.ingest_part.apply_async",
        lambda args, **options: queued.append(args[1]),
    )
    with override_settings(INGEST_FANOUT_MIN_BYTES=1, INGEST_FANOUT_PARTS=7):
        upload = _create(content)
        ingest_upload.delay(upload.pk)
        first_cut = list(queued)
        outcomes = [ingest_fanout.part_ingest(upload_id=upload.pk, spec=s) for s in first_cut]
    assert outcomes == ["stored"] * 6 + ["cut again"]
    second_cut = queued[len(first_cut) :]
    assert second_cut and {s["plan"] for s in second_cut}.isdisjoint({s["plan"] for s in first_cut})
    assert ingest_fanout.part_ingest(upload_id=upload.pk, spec=first_cut[0]) == "skipped"
    outcomes = [ingest_fanout.part_ingest(upload_id=upload.pk, spec=s) for s in second_cut]
    assert outcomes[-1] == "landed"
    _assert_same(_snapshot(upload), single)
    assert _no_part_files(upload.pk)


def test_layout_finds_the_header_and_the_first_jsonl_record() -> None:
    layout = split.find_layout(io.BytesIO(b"\xef\xbb\xbf\n  \na,b\n1,2\n"), kind=split.CSV)
    assert layout == split.Layout(kind=split.CSV, prefix_end=11, prefix_lines=3)
    layout = split.find_layout(io.BytesIO(b'\n{"a": 1}\n{"a": 2}\n'), kind=split.JSONL)
    assert layout == split.Layout(kind=split.JSONL, prefix_end=10, prefix_lines=2)
    assert split.find_layout(io.BytesIO(b"not json\n{}\n"), kind=split.JSONL) is None


# --- A real worker -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_part_still_lands_exact_totals(redis_url: str, tmp_path: Path) -> None:
    """Parts go to the ingest task's own queue; a part whose process dies is redelivered and
    the upload lands the same totals as one pass, with the ingest task itself run once."""
    import os
    import signal
    import time

    from tests.audit_app.ingestion.test_ingest_worker import _generic_csv, _pool_children, _wait
    from tests.integration_support import tasks_sent_to_broker, worker_environment
    from tests.support.processes import celery_worker

    # Parts of 60,000 rows take a second or more each, so a kill while fewer than half the rows
    # are read lands inside a part (with 15,000-row parts the parts could all finish first).
    content, expected = _generic_csv(240_000, seed=7)
    upload = _create(content, "big.csv")
    env = {
        **worker_environment(redis_url),
        "INGEST_FANOUT_MIN_BYTES": "1",
        "INGEST_FANOUT_PARTS": "4",
    }
    with (
        celery_worker(env=env, tmp_path=tmp_path, pool="prefork") as worker,
        tasks_sent_to_broker(),
    ):
        ingest_upload.apply_async(args=[upload.pk], queue=worker.queue)

        def mid_part() -> bool:
            current = Upload.objects.get(pk=upload.pk)
            return (
                current.status == Upload.Status.RUNNING
                and 0 < current.rows_read < expected["requests"] // 2
            )

        _wait(mid_part, 60, "a part to be under way")
        children = _pool_children(worker.process.pid)
        assert len(children) == 1, children
        os.kill(children[0], signal.SIGKILL)
        started = time.monotonic()
        _wait(
            lambda: Upload.objects.get(pk=upload.pk).status == Upload.Status.SUCCEEDED,
            180,
            f"the parts to land; worker log:\n{worker.log()}",
        )
        assert time.monotonic() - started < 180
        # The landing part deletes the part files after its transaction commits: wait for it
        # to finish before the worker is stopped.
        log = worker.wait_for_log("'landed'")
        log = worker.wait_for_log("exited prematurely")

    landed = Upload.objects.get(pk=upload.pk)
    assert landed.attempts == 1, log  # the ingest task was not run again; a part was
    assert "WorkerLostError" in log
    assert log.count("audit_app.ingest_part[") >= 5, log
    assert landed.rows_read == landed.rows_accepted == expected["requests"]
    assert landed.requests == expected["requests"]
    assert landed.input_tokens == expected["input_tokens"]
    assert landed.output_tokens == expected["output_tokens"]
    rollups = HourlyRollup.objects.filter(upload=landed)
    assert sum(r.requests for r in rollups) == expected["requests"]
    assert _no_part_files(upload.pk), default_storage.listdir(f"ingest-parts/{upload.pk}")
