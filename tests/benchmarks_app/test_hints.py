"""The flags the hints name are flags the commands accept: each gate hint is run.

A gate on two stored runs leaves one field unstated on one side; the test reads the flag from
the sentence the `gate` command prints, runs the command again with that flag (on a run id it
completes the stored run) and expects the gap closed: both runs are the vLLM fixture with the
same latencies, so once the field is stated alike the gate passes.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmarks_app.hints import meta_flag, meta_for_side, meta_option
from benchmarks_app.models import BenchmarkRun
from benchmarks_app.services import benchmark_run_import
from benchmarks_app.views import page_sentence
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db

FIXTURE = json.loads((FIXTURES_DIR / "benchmarks" / "vllm_baseline.json").read_text())
# A flag as a sentence prints it: "--meta-baseline num_gpus=8".
PRINTED_FLAG = re.compile(r"(--meta-(?:baseline|candidate)) (\w+)=([^)\s]*)")
HOSTED = {"provider": "acme", "num_gpus": "", "usd_per_gpu_hour": "", "batch_size": ""}
PRICES = {"usd_per_million_input": "0.90", "usd_per_million_output": "0.90"}


def _run(label: str, meta: dict[str, str]) -> BenchmarkRun:
    data = {**FIXTURE, "label": label}  # same figures, other bytes
    return benchmark_run_import(
        source=io.BytesIO(json.dumps(data).encode()),
        filename=f"{label}.json",
        meta={"gpu_utilization_pct": "85", **meta},
    )


def _gate(capsys: Any, *args: str) -> str:
    with contextlib.suppress(SystemExit):  # not a pass: the printed sentences say why
        call_command("gate", *args)
    return str(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("baseline_meta", "candidate_meta", "expected"),
    [
        ({}, {"num_gpus": ""}, {("--meta-candidate", "num_gpus", "8")}),
        ({"usd_per_gpu_hour": ""}, {}, {("--meta-baseline", "usd_per_gpu_hour", "4.00")}),
        ({"gpu_utilization_pct": ""}, {}, {("--meta-baseline", "gpu_utilization_pct", "85")}),
        # Stated on the candidate only: the hint leaves the value to the user (…).
        ({"quantization": ""}, {}, {("--meta-baseline", "quantization", "…")}),
        (
            {**HOSTED},
            {**HOSTED, **PRICES},
            {
                ("--meta-baseline", "usd_per_million_input", "0.90"),
                ("--meta-baseline", "usd_per_million_output", "0.90"),
            },
        ),
    ],
)
def test_the_flag_a_gate_hint_names_is_accepted_and_closes_the_gap(
    capsys: Any,
    baseline_meta: dict[str, str],
    candidate_meta: dict[str, str],
    expected: set[tuple[str, str, str]],
) -> None:
    baseline, candidate = _run("base", baseline_meta), _run("cand", candidate_meta)
    ids = ["--baseline", str(baseline.pk), "--candidate", str(candidate.pk)]
    out = _gate(capsys, *ids)
    assert "INCOMPLETE" in out
    hints = [line for line in out.splitlines() if line.startswith("  missing: ")]
    assert hints
    flags = {flag for line in hints for flag in PRINTED_FLAG.findall(line)}
    assert flags == expected
    # The stated side's own value is the one to give where the hint leaves it open.
    args = [
        arg
        for option, key, example in sorted(flags)
        for arg in (option, f"{key}={'fp8' if example == '…' else example}")
    ]
    out = _gate(capsys, *ids, *args)
    assert out.startswith("gate "), out
    assert ": PASS - " in out.splitlines()[0], out
    assert "missing:" not in out


def test_the_gate_refuses_the_import_commands_flag() -> None:
    # Why a gate hint names the side: `--meta` alone is ambiguous to the gate.
    with pytest.raises(CommandError, match="ambiguous option: --meta could match"):
        call_command("gate", "--baseline", "1", "--candidate", "2", "--meta", "num_gpus=8")


def test_a_run_hint_names_the_import_flag_and_the_gate_names_the_side() -> None:
    run_hint = f"accelerators: state the accelerator count ({meta_flag('num_gpus', '8')})"
    assert run_hint.endswith("(--meta num_gpus=8)")
    assert meta_for_side(run_hint, "candidate").endswith("(--meta-candidate num_gpus=8)")
    # Other tools' flags and a side's flag stay as they are.
    assert meta_for_side("keep --metadata and --metric-percentiles 95", "baseline") == (
        "keep --metadata and --metric-percentiles 95"
    )
    assert meta_for_side("(--meta-baseline a=1)", "candidate") == "(--meta-baseline a=1)"
    assert meta_option("baseline") == "--meta-baseline"
    with pytest.raises(ValueError, match="side must be one of baseline, candidate"):
        meta_option("both")


def test_the_page_names_the_run_pages_field_for_either_flag() -> None:
    for option in ("--meta", "--meta-baseline", "--meta-candidate"):
        sentence = f"state num_gpus ({option} num_gpus=8 {option} usd_per_gpu_hour=4.00)"
        assert page_sentence(sentence) == (
            "state num_gpus (“Accelerators per replica” and “$ per accelerator-hour” "
            "on the run page)"
        )
