"""GPU telemetry: the hand-made nvidia-smi CSV and DCGM exporter text, and their edge cases."""

from __future__ import annotations

import pytest

from benchmarks_app.artifacts import ArtifactError, TelemetrySample
from benchmarks_app.converters import convert
from tests.benchmarks_app.converters.files import local

# 2025-03-10 14:00:00 UTC: 20157 days × 86400 s + 14 h × 3600 s = 1741564800 + 50400
T0 = 1_741_615_200.0


def test_nvidia_smi_csv() -> None:
    artifact = convert(local("nvidia_smi.csv"), filename="nvidia_smi.csv")
    assert artifact.tool == "telemetry"
    assert artifact.telemetry == (
        TelemetrySample(timestamp_s=T0, gpu_index=0, utilization_pct=40.0, power_w=300.0),
        TelemetrySample(timestamp_s=T0, gpu_index=1, utilization_pct=60.0, power_w=400.0),
        TelemetrySample(timestamp_s=T0 + 1, gpu_index=0, utilization_pct=50.0, power_w=350.5),
        # "[N/A]" is no value, not 0 %
        TelemetrySample(timestamp_s=T0 + 1, gpu_index=1, utilization_pct=None, power_w=410.25),
        TelemetrySample(timestamp_s=T0 + 2.5, gpu_index=0, utilization_pct=90.0, power_w=649.5),
        TelemetrySample(timestamp_s=T0 + 2.5, gpu_index=1, utilization_pct=100.0, power_w=690.25),
    )
    assert artifact.metadata == {"gpu_type": "NVIDIA H100 80GB HBM3", "driver": "550.54.15"}
    assert artifact.assumptions == (
        "nvidia-smi timestamps carry no time zone; they were read as UTC.",
    )


def test_nvidia_smi_nounits_reads_the_same() -> None:
    data = (
        b"timestamp, index, utilization.gpu [%], power.draw [W]\n"
        b"2025/03/10 14:00:00.000, 0, 40, 300.00\n"
    )
    artifact = convert(data, filename="gpu.csv")
    assert artifact.telemetry == (
        TelemetrySample(timestamp_s=T0, gpu_index=0, utilization_pct=40.0, power_w=300.0),
    )


def test_nvidia_smi_without_units_anywhere_assumes_percent_and_watts() -> None:
    data = b"timestamp,index,utilization.gpu,power.draw\n2025-03-10T14:00:00Z,3,40,300\n"
    artifact = convert(data, filename="gpu.csv")
    assert artifact.telemetry[0] == TelemetrySample(
        timestamp_s=T0, gpu_index=3, utilization_pct=40.0, power_w=300.0
    )
    assert artifact.assumptions == (
        "`power.draw` had no unit; read as W, nvidia-smi's only unit.",
        "`utilization.gpu` had no unit; read as %, nvidia-smi's only unit.",
    )


def test_nvidia_smi_bad_value_names_the_line() -> None:
    data = b"timestamp, index, utilization.gpu [%]\n2025/03/10 14:00:00.000, 0, lots %\n"
    with pytest.raises(ArtifactError, match="line 2: `utilization.gpu` is 'lots %'"):
        convert(data, filename="gpu.csv")


def test_nvidia_smi_bad_timestamp_names_the_line() -> None:
    data = b"timestamp, index, power.draw [W]\nyesterday, 0, 300 W\n"
    with pytest.raises(ArtifactError, match="line 2: `timestamp` is 'yesterday'"):
        convert(data, filename="gpu.csv")


def test_dcgm_exporter_text() -> None:
    artifact = convert(local("dcgm_exporter.prom"), filename="dcgm.prom")
    assert artifact.tool == "telemetry"
    # Timestamps are ms: 1741615200000 ms = T0 s. DCGM_FI_DEV_SM_CLOCK is skipped.
    assert artifact.telemetry == (
        TelemetrySample(timestamp_s=T0, gpu_index=0, utilization_pct=80.0, power_w=612.5),
        TelemetrySample(timestamp_s=T0, gpu_index=1, utilization_pct=70.0, power_w=587.5),
        TelemetrySample(timestamp_s=T0 + 1, gpu_index=0, utilization_pct=90.0, power_w=640.0),
    )
    assert artifact.metadata == {"gpu_type": "NVIDIA H100 80GB HBM3", "driver": "550.54.15"}
    assert artifact.assumptions == ()


def test_dcgm_sample_without_timestamp_is_refused_with_its_line() -> None:
    data = b'# HELP x\nDCGM_FI_DEV_GPU_UTIL{gpu="0"} 80\n'
    with pytest.raises(ArtifactError, match="line 2: DCGM_FI_DEV_GPU_UTIL has no timestamp"):
        convert(data, filename="dcgm.prom")


def test_telemetry_forced_on_a_benchmark_file_is_refused() -> None:
    with pytest.raises(ArtifactError, match="not telemetry output"):
        convert(local("vllm_current_5_requests.json"), filename="run.json", format="telemetry")
