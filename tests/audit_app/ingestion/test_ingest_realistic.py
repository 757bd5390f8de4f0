"""A realistic month (generated LiteLLM CSV and OTel JSONL) through the ingest service, checked
against an independent pandas computation on the generator's own frame."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_app.demo.traffic import generate_requests
from audit_app.demo.writers import write_litellm_csv, write_otel_jsonl
from audit_app.ingestion.histograms import LatencyHistogram
from audit_app.ingestion.ingest import upload_ingest
from audit_app.ingestion.uploads import upload_create
from audit_app.models import HourlyRollup, Upload

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def month() -> pd.DataFrame:
    return generate_requests(start=datetime(2026, 10, 1, tzinfo=UTC), days=14, scale=0.01, seed=9)


def _ingest(path: Path) -> Upload:
    with open(path, "rb") as source:
        upload = upload_create(source=source, original_name=path.name, enqueue=False)
    return upload_ingest(upload_id=upload.pk)


@pytest.mark.parametrize("writer", ["litellm_csv", "otel_jsonl"])
def test_every_request_token_and_cent_is_accounted_for(
    month: pd.DataFrame, tmp_path: Path, writer: str
) -> None:
    frame = month if writer == "litellm_csv" else month[month["pool"] != ""]
    path = tmp_path / f"month.{writer}"
    (write_litellm_csv if writer == "litellm_csv" else write_otel_jsonl)(
        frame.reset_index(drop=True), path
    )
    upload = _ingest(path)
    assert upload.status == Upload.Status.SUCCEEDED, upload.error
    assert upload.rows_rejected == 0
    assert upload.requests == len(frame)
    assert upload.input_tokens == int(frame["input_tokens"].sum())
    assert upload.output_tokens == int(frame["output_tokens"].sum())

    rollups = pd.DataFrame(
        HourlyRollup.objects.filter(upload=upload).values(
            "workload",
            "requests",
            "input_tokens",
            "output_tokens",
            "logged_cost_usd",
            "streaming_requests",
        )
    )
    got = rollups.groupby("workload").agg(
        requests=("requests", "sum"),
        input_tokens=("input_tokens", "sum"),
        output_tokens=("output_tokens", "sum"),
        streaming=("streaming_requests", "sum"),
    )
    # LiteLLM marks streaming by a first-token time before the end, which a failed request
    # does not have; OTel says it in an attribute.
    streamed = frame["streaming"].astype(bool)
    if writer == "litellm_csv":
        streamed &= frame["status"] == "success"
    expected = (
        frame.assign(streaming=streamed)
        .groupby("workload")
        .agg(
            requests=("request_id", "size"),
            input_tokens=("input_tokens", "sum"),
            output_tokens=("output_tokens", "sum"),
            streaming=("streaming", "sum"),
        )
    )
    pd.testing.assert_frame_equal(got.sort_index(), expected.sort_index(), check_dtype=False)

    if writer == "litellm_csv":
        # The log's own cost, summed in Decimal from the generator's values, to the cent.
        logged = {
            w: sum((Decimal(str(c)) for c in g["cost_usd"].dropna()), Decimal(0))
            for w, g in frame.groupby("workload")
        }
        got_cost = rollups.groupby("workload")["logged_cost_usd"].apply(
            lambda s: sum(s, Decimal(0))
        )
        for workload, cost in logged.items():
            assert abs(got_cost[workload] - cost) < Decimal("0.01"), workload

    # End-to-end p95 per workload from merged hourly histograms, within 1 % of numpy.
    for workload, group in frame.groupby("workload"):
        merged = LatencyHistogram.merge_all(
            LatencyHistogram.from_bytes(bytes(h))
            for h in HourlyRollup.objects.filter(upload=upload, workload=workload).values_list(
                "latency_histogram", flat=True
            )
            if h
        )
        exact = float(np.percentile(group["latency_ms"].to_numpy(), 95))
        assert abs(merged.quantile(0.95) - exact) / exact < 0.01, workload
