"""Long file names through the API, the page, the CLI and the services behind them, for token
logs, billing exports, benchmark results and GPU telemetry.

A name of up to 255 UTF-8 bytes is kept whole (`Upload.original_name`, and a benchmark run named
after its file keeps up to 200 bytes of it); a longer one is cut keeping its extension. The
stored file's last path component stays within 255 bytes, also with the suffix the storage adds
to a taken name. Written for PostgreSQL (varchar columns refuse overlong values; SQLite does not);
run with DATABASE_URL set to check it there.
"""

from __future__ import annotations

import io
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.test import Client

from audit_app.ingestion.uploads import upload_create
from audit_app.models import Upload
from benchmarks_app.models import BenchmarkRun
from benchmarks_app.services import benchmark_run_import
from tests.audit_app.ingestion.ingest_samples import SAMPLE_CSV
from tests.factories import UserFactory
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db

FIXTURES = FIXTURES_DIR
CONTENT = {
    "token_log": SAMPLE_CSV,
    "billing": (FIXTURES / "billing" / "focus-1.3_providers.csv").read_bytes(),
    "benchmark": (FIXTURES / "benchmarks" / "vllm_baseline.json").read_bytes(),
    "telemetry": (FIXTURES / "benchmarks" / "nvidia_smi.csv").read_bytes(),
}
EXTENSION = {"token_log": ".csv", "billing": ".csv", "benchmark": ".json", "telemetry": ".csv"}
# The storage makes a taken name free with "_" and 7 random characters.
COLLISION_SUFFIX = "_abcdefg"
# Django refuses (400) a multipart part whose headers pass 1024 bytes, which a file name of
# about 930 bytes does; 900 still goes through. Longer names reach the service only from code
# (no Linux path component passes 255 bytes): `test_service_*` sends 1000.
HTTP_LONGEST = 900


def _name(total_bytes: int, extension: str, *, multibyte: bool = False) -> str:
    """A name of exactly ``total_bytes`` UTF-8 bytes ending in ``extension``."""
    stem_bytes = total_bytes - len(extension)
    if not multibyte:
        return "x" * stem_bytes + extension
    euros, rest = divmod(stem_bytes, 3)  # "€" is 3 bytes, "é" 2, "x" 1
    return "€" * euros + {0: "", 1: "x", 2: "é"}[rest] + extension


def _cases(extension: str) -> list[tuple[str, str]]:
    """(the name as sent, the name `original_name` must keep)."""
    cases = [(_name(n, extension), _name(n, extension)) for n in (68, 69, 74, 100, 200, 255)]
    cases.append((_name(255, extension, multibyte=True), _name(255, extension, multibyte=True)))
    cases += [(_name(n, extension), _name(255, extension)) for n in (300, HTTP_LONGEST)]
    cases.append(("é" * 150 + extension, "é" * ((255 - len(extension)) // 2) + extension))
    return cases


CASES = [
    pytest.param(
        kind,
        sent,
        kept,
        id=f"{kind}-{len(sent.encode())}b-{'mb' if ord(sent[0]) > 127 else 'ascii'}",
    )
    for kind in CONTENT
    for sent, kept in _cases(EXTENSION[kind])
]


def _file(name: str, data: bytes) -> io.BytesIO:
    """A file the test client sends under ``name`` as is (SimpleUploadedFile would already cut
    a name over 255 characters, as Django does on the server)."""
    file = io.BytesIO(data)
    file.name = name
    return file


def _via_api(client: Client, kind: str, name: str, data: bytes) -> Upload:
    if kind in ("token_log", "billing"):
        response = client.post("/api/v1/uploads/", {"file": _file(name, data), "kind": kind})
        assert response.status_code == 202, response.content
        return Upload.objects.get(pk=response.json()["id"])
    payload = {"file": _file(name, data)}
    if kind == "telemetry":
        payload = {"file": _file("run.json", CONTENT["benchmark"]), "telemetry": payload["file"]}
    response = client.post("/api/v1/benchmark-runs/", payload)
    assert response.status_code == 201, response.content
    return _run_upload(BenchmarkRun.objects.get(pk=response.json()["id"]), kind)


def _via_page(client: Client, kind: str, name: str, data: bytes) -> Upload:
    if kind in ("token_log", "billing"):
        payload = {"file": _file(name, data), "kind": kind, "format": "auto"}
        response = client.post("/uploads/new/", payload)
        assert response.status_code == 302, response.content
        upload_id = int(response["Location"].strip("/").rsplit("/", 1)[1])
        assert client.get(response["Location"]).status_code == 200
        return Upload.objects.get(pk=upload_id)
    payload = {"format": "auto", "file": _file(name, data)}
    if kind == "telemetry":
        payload |= {"file": _file("run.json", CONTENT["benchmark"]), "telemetry": payload["file"]}
    response = client.post("/benchmarks/", payload)
    assert response.status_code == 302, response.content
    assert client.get(response["Location"]).status_code == 200
    return _run_upload(BenchmarkRun.objects.get(), kind)


def _via_cli(tmp_path: Path, kind: str, name: str, data: bytes) -> Upload:
    path = tmp_path / name  # at most 255 bytes: longer names cannot exist on this filesystem
    path.write_bytes(data)
    if kind in ("token_log", "billing"):
        call_command("ingest", str(path), "--kind", kind, stdout=StringIO())
        upload = Upload.objects.get()
        assert upload.status == Upload.Status.SUCCEEDED, upload.error
        return upload
    if kind == "benchmark":
        call_command("benchmark_import", str(path), stdout=StringIO())
    else:
        run_file = tmp_path / "run.json"
        run_file.write_bytes(CONTENT["benchmark"])
        call_command("benchmark_import", str(run_file), "--telemetry", str(path), stdout=StringIO())
    return _run_upload(BenchmarkRun.objects.get(), kind)


def _run_upload(run: BenchmarkRun, kind: str) -> Upload:
    upload = run.telemetry_upload if kind == "telemetry" else run.upload
    assert upload is not None
    return upload


def _check_stored(upload: Upload, *, kept: str, data: bytes) -> None:
    upload.refresh_from_db()
    assert upload.original_name == kept
    with upload.file.open("rb") as stored:
        assert stored.read() == data
    component = Path(upload.file.name).name
    assert component.endswith(Path(kept).suffix)
    assert len(component.encode()) + len(COLLISION_SUFFIX) <= 255
    taken = default_storage.get_available_name(upload.file.name, max_length=500)
    assert taken != upload.file.name
    assert len(Path(taken).name.encode()) <= 255


@pytest.fixture
def uploader(client: Client) -> Client:
    client.force_login(UserFactory(username="long-names", roles=["engineer", "finops"]))
    return client


@pytest.mark.parametrize(("kind", "sent", "kept"), CASES)
def test_api(
    uploader: Client, kind: str, sent: str, kept: str, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        upload = _via_api(uploader, kind, sent, CONTENT[kind])
    _check_stored(upload, kept=kept, data=CONTENT[kind])
    assert upload.status == Upload.Status.SUCCEEDED, upload.error
    if kind == "benchmark":
        run = BenchmarkRun.objects.get()
        assert run.name == (kept if len(kept.encode()) <= 200 else _run_name(kept))
    detail = uploader.get(f"/api/v1/uploads/{upload.pk}/")
    assert detail.json()["original_name"] == kept


@pytest.mark.parametrize(("kind", "sent", "kept"), CASES)
def test_page(
    uploader: Client, kind: str, sent: str, kept: str, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        upload = _via_page(uploader, kind, sent, CONTENT[kind])
    _check_stored(upload, kept=kept, data=CONTENT[kind])
    assert upload.status == Upload.Status.SUCCEEDED, upload.error
    raw = uploader.get(f"/uploads/{upload.pk}/raw/")
    assert raw.status_code == 200
    assert b"".join(raw.streaming_content) == CONTENT[kind]


CLI_CASES = [case for case in CASES if len(case.values[1].encode()) <= 255]


@pytest.mark.parametrize(("kind", "sent", "kept"), CLI_CASES)
def test_cli(tmp_path: Path, kind: str, sent: str, kept: str) -> None:
    upload = _via_cli(tmp_path, kind, sent, CONTENT[kind])
    _check_stored(upload, kept=kept, data=CONTENT[kind])


def _run_name(kept: str) -> str:
    """The first 200 bytes of a run's file name, keeping `.json`: 195 bytes of stem."""
    stem = kept.removesuffix(".json").encode()[:195].decode(errors="ignore")
    return stem + ".json"


def test_a_run_named_by_hand_keeps_its_name(uploader: Client) -> None:
    response = uploader.post(
        "/api/v1/benchmark-runs/",
        {"file": _file(_name(HTTP_LONGEST, ".json"), CONTENT["benchmark"]), "name": "baseline"},
    )
    assert response.status_code == 201, response.content
    assert BenchmarkRun.objects.get().name == "baseline"


@pytest.mark.parametrize("kind", ["token_log", "billing"])
@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        (_name(1000, ".csv"), _name(255, ".csv")),
        (_name(1000, ".csv.gz"), _name(255, ".csv.gz")),
        ("€" * 333 + ".csv", "€" * 83 + ".csv"),  # 1003 bytes -> 253
    ],
    ids=["1000b", "1000b-csv.gz", "1003b-mb"],
)
def test_service_upload_of_a_1000_byte_name(kind: str, sent: str, kept: str) -> None:
    upload = upload_create(
        source=io.BytesIO(CONTENT[kind]), original_name=sent, kind=kind, enqueue=False
    )
    _check_stored(upload, kept=kept, data=CONTENT[kind])


def test_service_benchmark_run_of_a_1000_byte_name() -> None:
    run = benchmark_run_import(
        source=io.BytesIO(CONTENT["benchmark"]),
        filename=_name(1000, ".json"),
        telemetry=(io.BytesIO(CONTENT["telemetry"]), _name(1000, ".csv")),
    )
    assert run.name == "x" * 195 + ".json"
    _check_stored(run.upload, kept=_name(255, ".json"), data=CONTENT["benchmark"])
    assert run.telemetry_upload is not None
    _check_stored(run.telemetry_upload, kept=_name(255, ".csv"), data=CONTENT["telemetry"])


def test_a_name_past_djangos_multipart_header_limit_is_a_400(uploader: Client) -> None:
    uploader.raise_request_exception = False
    response = uploader.post(
        "/api/v1/uploads/", {"file": _file(_name(1000, ".csv"), SAMPLE_CSV), "kind": "token_log"}
    )
    assert response.status_code == 400
    assert response.json() == {
        "detail": "Multipart form parse error - Request max total header size exceeded.",
        "errors": {},
    }
    page = uploader.post(
        "/uploads/new/", {"file": _file(_name(1000, ".csv"), SAMPLE_CSV), "format": "auto"}
    )
    assert page.status_code == 400
    assert not Upload.objects.exists()
