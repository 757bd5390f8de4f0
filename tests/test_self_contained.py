"""The repository runs from a fresh clone: no code or test reaches for a `shared` folder beside it.

The real sample files the tests read live in `tests/fixtures/real/`; a path that climbs out of the
repository to a sibling `shared` folder works only on the machine where that folder happens to
exist, so a new user's `make test` would fail. This scan names the file and line of any such path,
and the samples are checked to be present and byte-identical to what was copied from upstream.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCANNED_FOLDERS = ("audit_app", "benchmarks_app", "config", "tests", "bench")
# What `make test` and CI run besides the Python files.
SCANNED_FILES = ("Makefile", ".ci/run", "pyproject.toml", "manage.py")

# Written so that this file's own text matches none of them (the regex source never contains the
# path it looks for), and the example lines below are assembled at run time for the same reason.
OUTSIDE_SHARED = (
    re.compile(r"\.\.[/\\]shared\b"),  # a relative path one level up, in any string or comment
    re.compile(r"/\s*[\"']shared[\"']"),  # a pathlib join onto a quoted shared segment
    re.compile(r"join\([^)]*[\"']\.\.[\"'][^)]*[\"']shared[\"']"),  # os.path.join up, then shared
    re.compile(r"/work/(?:shared)\b"),  # the folder's absolute path on the development machine
)


def outside_shared_references(root: Path) -> list[str]:
    """Every `path:line: text` under `root` that points at a `shared` folder outside it."""
    paths = [path for folder in SCANNED_FOLDERS for path in sorted((root / folder).rglob("*.py"))]
    paths += [root / name for name in SCANNED_FILES if (root / name).is_file()]
    found = []
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            if any(pattern.search(line) for pattern in OUTSIDE_SHARED):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_nothing_reads_a_shared_folder_outside_the_repository() -> None:
    found = outside_shared_references(REPO)
    assert found == [], "paths outside the repository (use tests/fixtures/real/):\n" + "\n".join(
        found
    )


REAL = REPO / "tests" / "fixtures" / "real"
# Size in bytes and the first 16 hex digits of the sha256 of each real sample, as recorded in the
# SOURCES.md files when the samples were copied from upstream (tests/fixtures/real/README.md).
REAL_SAMPLES = {
    "billing/focus-1.0_official-sample_1000rows.csv": (755_423, "e91e5ac7edf01ed2"),
    "billing/aws-cur-legacy_anonymous-sample_1281rows.csv": (1_039_102, "31e59976423fa7fb"),
    "billing/azure-ea-costdetails_anonymous-sample_27rows.csv": (21_224, "973efb5fa30c3c99"),
    # Examples of the FOCUS specification (README.md): the 1.3 draft's multi-model usage, and
    # 1.2's SaaS agreement example with M/D/YY dates.
    "billing/focus-1.3-spec_multi-model-usage.csv": (3_875, "e0f742d61a7e37b6"),
    "billing/focus-1.2-spec_simple-saas-agreements-c_mdyy-dates.csv": (1_703, "b8e39b1d4e860a01"),
    "benchmarks/vllm/inferencex_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json": (
        1_322,
        "e996680c182eba87",
    ),
    "benchmarks/vllm/inferencex_multinode_gpt-oss-120b_conc4_gpus16_ctx8_gen8.json": (
        1_457,
        "fd4762534f521f4c",
    ),
    "benchmarks/vllm/inferencex_multinode_gpt-oss-120b_conc8_gpus16_ctx8_gen8.json": (
        1_456,
        "ed56d24295d849c0",
    ),
    "benchmarks/vllm/inferencex_multinode_gpt-oss-120b_conc32_gpus16_ctx8_gen8.json": (
        1_475,
        "6d74a41fff9f834b",
    ),
    "benchmarks/inferencex/agg_kimik2.5_1k1k_int4_vllm_tp8_conc4_mi355x.json": (
        1_534,
        "98ac6c14aaf966ac",
    ),
    "benchmarks/inferencex/slo_variant_glm5_fp8_vllm_tp8_isl1024_osl128_conc4.json": (
        710,
        "50acfed7962549f7",
    ),
    "benchmarks/guidellm/v2_report_guidellm-0.8.0.dev18.json": (96_137, "3f844dcdb588e481"),
    "benchmarks/guidellm/legacy_v0.3_benchmarks_stripped.json": (22_556, "ac83f250f337e434"),
    "benchmarks/guidellm/legacy_v0.3_benchmarks_stripped.yaml": (26_667, "ffe99db3f47879dd"),
    "benchmarks/aiperf/audit_baseline-chat_bare_profile_export_aiperf.json": (
        7_130,
        "a9e68c4b5de22b5f",
    ),
    "benchmarks/aiperf/SYNTHETIC_operator_ui_fixture_c128_profile_export_aiperf.json": (
        1_425,
        "6f5f6358164cc402",
    ),
    "benchmarks/llmperf/vllm_Yi-1.5-34B-Chat_conc4_550_150_summary.json": (
        4_396,
        "bec0f40c24fee12f",
    ),
    "benchmarks/llmperf/vllm_Yi-1.5-34B-Chat_conc4_550_150_individual_responses.json": (
        38_542,
        "88e26a6830327bc6",
    ),
    "benchmarks/llmperf/vllm_Yi-1.5-34B-Chat_cur_4.json": (806, "34863885cf837c1e"),
    "benchmarks/llmperf/vllm-01-ai_Yi-1.5-34B-Chat_sweep.csv": (3_003, "b32be99d2921b393"),
    "benchmarks/llmperf/hosted/bedrock_llama-2-70b-chat_summary.json": (
        4_495,
        "9b57938ac2bacb2a",
    ),
    "benchmarks/llmperf/hosted/bedrock_llama-2-13b-chat_summary.json": (
        4_497,
        "8f8471456a802843",
    ),
    "benchmarks/llmperf/hosted/lepton_llama-2-70b-chat_summary.json": (
        4_501,
        "475b3f39407ffbc5",
    ),
    "benchmarks/llmperf/hosted/lepton_llama-2-70b-chat_individual_responses.json": (
        48_931,
        "74c6418c7248c7ba",
    ),
    "benchmarks/mlperf/llama2-70b-99_Server_mlperf_log_summary.txt": (3_144, "36629989e5d7585f"),
    "benchmarks/mlperf/llama2-70b-99_Interactive_mlperf_log_summary.txt": (
        3_120,
        "5fd29cf3d80f008b",
    ),
    "benchmarks/mlperf/llama2-70b-99_Offline_mlperf_log_summary.txt": (
        1_894,
        "d778ba07a43b8b69",
    ),
    "benchmarks/llm-d-benchmark/br_v0_2_1_example.yaml": (26_093, "1878b936901c55e2"),
    # Extracted, not byte-copied: wandb's test held the reports as a Python literal (README.md).
    "benchmarks/telemetry/neuron-monitor_trn1.2xlarge_wandb_3_reports.jsonl": (
        14_798,
        "1bb9cf5eb174dfd4",
    ),
    # Extracted, not byte-copied: LiteLLM's test held the payload as a Python literal.
    "token_logs/litellm_standard_logging_payload_fake-openai-endpoint.jsonl": (
        2_464,
        "b74c7626d5d15102",
    ),
}


def test_the_real_samples_are_in_the_repository_unmodified() -> None:
    on_disk = {
        path.relative_to(REAL).as_posix(): path
        for folder in ("billing", "benchmarks", "token_logs")
        for path in (REAL / folder).rglob("*")
        if path.is_file() and path.name != "SOURCES.md"
    }
    assert sorted(on_disk) == sorted(REAL_SAMPLES)
    for name, path in on_disk.items():
        data = path.read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()[:16]) == REAL_SAMPLES[name], name
    for notes in (
        "README.md",
        "billing/SOURCES.md",
        "benchmarks/SOURCES.md",
        "token_logs/SOURCES.md",
        "LICENSES/Apache-2.0.txt",
        "LICENSES/NOTICE_ray-project-llmperf.txt",
        "LICENSES/MIT_finopsfoundation-focus_converters.txt",
        "LICENSES/CC-BY-4.0_FOCUS-Sample-Data_license.md",
        "LICENSES/CC-BY-4.0_FOCUS_Spec_license.md",
        "LICENSES/MIT_wandb-wandb.txt",
        "LICENSES/MIT_BerriAI-litellm.txt",
    ):
        assert (REAL / notes).is_file(), f"{REAL / notes} is missing"


SHARED = "shared"


@pytest.mark.parametrize(
    "line",
    [
        f'REAL = (REPO / ".." / "{SHARED}" / "fixtures").resolve()',
        f'REAL = Path(__file__).resolve().parents[4] / "{SHARED}" / "fixtures"',
        f"REAL = Path(__file__).parents[3] / '{SHARED}'",
        f'open("../{SHARED}/fixtures/real/billing/focus.csv")',
        f'os.path.join(ROOT, "..", "{SHARED}", "fixtures")',
        f'"""Read from /work/{SHARED} on the build machine."""',
    ],
)
def test_each_way_of_reaching_outside_is_found_with_its_file_and_line(
    tmp_path: Path, line: str
) -> None:
    (tmp_path / "tests" / "deep").mkdir(parents=True)
    (tmp_path / "tests" / "deep" / "test_x.py").write_text(f"import os\n\n{line}\n")
    assert outside_shared_references(tmp_path) == [f"tests/deep/test_x.py:3: {line}"]


def test_make_and_ci_files_are_scanned_too(tmp_path: Path) -> None:
    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci" / "run").write_text(f"#!/bin/sh\ncp -r ../{SHARED}/fixtures tests/\n")
    assert outside_shared_references(tmp_path) == [f".ci/run:2: cp -r ../{SHARED}/fixtures tests/"]


def test_the_word_shared_alone_is_not_a_path(tmp_path: Path) -> None:
    (tmp_path / "audit_app").mkdir()
    (tmp_path / "audit_app" / "tasks.py").write_text(
        "from celery import shared_task\n"
        'POOL = ("completion", "shared")\n'
        "with memos_shared_under(key):\n"
        '    FIXTURES = Path(__file__).parents[2] / "fixtures" / "shared_pool"\n'
        "# shared by every web process\n"
    )
    assert outside_shared_references(tmp_path) == []
