"""Accelerator telemetry: the hand-made nvidia-smi CSV, DCGM exporter text and neuron-monitor
JSON lines, a real neuron-monitor capture, and their edge cases."""

from __future__ import annotations

import pytest

from benchmarks_app.artifacts import ArtifactError, TelemetrySample
from benchmarks_app.converters import convert
from tests.benchmarks_app.converters.files import NEURON_MONITOR_REAL, local, real

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


# --- neuron-monitor ---------------------------------------------------------------------------

ADDED_CORE_0 = (
    "Several Neuron applications reported NeuronCore 0 in one report; their utilizations were "
    "added (at most 100 %)."
)


def _stamped(data: bytes, times: list[str]) -> bytes:
    """Each report line with a leading `"timestamp": …` key, as `jq -c '{timestamp: now} + .'`
    writes it (the text is spliced here, not parsed and re-serialized)."""
    lines = data.decode().splitlines()
    assert len(lines) == len(times)
    return "".join(
        f'{{"timestamp": {time}, {line[1:]}\n' for time, line in zip(times, lines, strict=True)
    ).encode()


def _report(timestamp: str, cores: str, error: str = "") -> bytes:
    """One neuron-monitor report line with one application and the given `neuroncores_in_use`."""
    return (
        f'{{"timestamp": {timestamp}, "neuron_runtime_data": [{{"pid": 7, "error": "", '
        f'"report": {{"neuroncore_counters": {{"period": 1.0, "neuroncores_in_use": {cores}, '
        f'"error": "{error}"}}}}}}]}}\n'
    ).encode()


def test_neuron_monitor_json_lines() -> None:
    artifact = convert(local("neuron_monitor.jsonl"), filename="neuron.jsonl")
    assert artifact.tool == "telemetry"
    # Line 1: application 4242 runs cores 0 and 1, 4343 core 2 (it lists 0 and 1 at 0 %).
    # Line 2: 4343 also ran on core 0 (10 %): 70.25 + 10 = 80.25. Line 3: no application.
    # The logical cores' own figures are read, not their physical halves under `v3d`.
    assert artifact.telemetry == (
        TelemetrySample(timestamp_s=T0, gpu_index=0, utilization_pct=40.5),
        TelemetrySample(timestamp_s=T0, gpu_index=1, utilization_pct=60.0),
        TelemetrySample(timestamp_s=T0, gpu_index=2, utilization_pct=25.0),
        TelemetrySample(timestamp_s=T0 + 1, gpu_index=0, utilization_pct=80.25),
        TelemetrySample(timestamp_s=T0 + 1, gpu_index=1, utilization_pct=80.0),
        TelemetrySample(timestamp_s=T0 + 1, gpu_index=2, utilization_pct=35.5),
    )
    assert all(sample.power_w is None for sample in artifact.telemetry)
    assert artifact.metadata == {"gpu_type": "trainium2"}
    assert artifact.assumptions == (ADDED_CORE_0,)


def test_neuron_monitor_json_array_reads_the_same() -> None:
    lines = local("neuron_monitor.jsonl").splitlines()
    array = b"[\n" + b",\n".join(lines) + b"\n]\n"
    artifact = convert(array, filename="neuron.json")
    assert artifact == convert(local("neuron_monitor.jsonl"), filename="neuron.jsonl")


def test_real_neuron_monitor_output_without_times_is_refused_naming_line_1() -> None:
    with pytest.raises(ArtifactError) as error:
        convert(real(NEURON_MONITOR_REAL), filename="neuron.jsonl")
    assert str(error.value) == (
        "line 1: the report has no `timestamp`; neuron-monitor writes no time of its own, so "
        "stamp each report as it is recorded: "
        "`neuron-monitor | jq -c --unbuffered '{timestamp: now} + .'`"
    )


def test_real_neuron_monitor_output_stamped_as_recorded() -> None:
    """wandb's three trn1.2xlarge reports (one application, NeuronCores 0 and 1), stamped a
    second apart."""
    data = _stamped(real(NEURON_MONITOR_REAL), ["1741615200", "1741615201.0", "1741615202.5"])
    artifact = convert(data, filename="neuron.jsonl")
    # Copied by hand from each line's neuroncores_in_use: core 0 was barely busy, core 1 idle.
    assert artifact.telemetry == (
        TelemetrySample(timestamp_s=T0, gpu_index=0, utilization_pct=1.3631567613356375),
        TelemetrySample(timestamp_s=T0, gpu_index=1, utilization_pct=0.0),
        TelemetrySample(timestamp_s=T0 + 1, gpu_index=0, utilization_pct=1.3560819560861623),
        TelemetrySample(timestamp_s=T0 + 1, gpu_index=1, utilization_pct=0.0),
        TelemetrySample(timestamp_s=T0 + 2.5, gpu_index=0, utilization_pct=1.3128372400154966),
        TelemetrySample(timestamp_s=T0 + 2.5, gpu_index=1, utilization_pct=0.0),
    )
    # Its neuron_hardware_info predates `neuron_device_type`: no gpu_type.
    assert artifact.metadata == {} and artifact.assumptions == ()


@pytest.mark.parametrize(
    ("timestamp", "assumptions"),
    [
        ('"2025-03-10T14:00:00Z"', ()),
        ('"2025-03-10T15:00:00+01:00"', ()),
        (
            '"2025-03-10 14:00:00"',
            ("neuron-monitor timestamps carry no time zone; they were read as UTC.",),
        ),
        ('"1741615200.0"', ()),
    ],
)
def test_neuron_monitor_timestamp_forms(timestamp: str, assumptions: tuple[str, ...]) -> None:
    artifact = convert(_report(timestamp, '{"3": {"neuroncore_utilization": 12.5}}'), filename="n")
    assert artifact.telemetry == (
        TelemetrySample(timestamp_s=T0, gpu_index=3, utilization_pct=12.5),
    )
    assert artifact.assumptions == assumptions


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            _report("1741615200000", "{}"),
            "line 1: `timestamp` is 1741615200000, too large for seconds since the epoch "
            "(milliseconds?)",
        ),
        (_report('"yesterday"', "{}"), "line 1: `timestamp` is 'yesterday'; expected seconds"),
        (
            _report("1741615200", '{"0": {"neuroncore_utilization": 1}}')
            + b'{"timestamp": 1741615201, "neuron_runtime_data": [\n',
            "line 2: the report ends early (truncated file?)",
        ),
        (
            _report("1741615200", "{}") + b'{"timestamp": 1741615201, "neuron_runtime_data": x}\n',
            "line 2: not valid JSON at column 50: Expecting value",  # `x`: 49 characters before it
        ),
        (
            _report("1741615200", '{"0": {"neuroncore_utilization": "busy"}}'),
            "line 1: `neuron_runtime_data[0].report.neuroncore_counters.neuroncores_in_use.0"
            ".neuroncore_utilization` is 'busy', not a number",
        ),
        (
            _report("1741615200", '{"nc0": {"neuroncore_utilization": 5}}'),
            "line 1: `neuron_runtime_data[0].report.neuroncore_counters.neuroncores_in_use.nc0`: "
            "'nc0' is not a NeuronCore index",
        ),
        (
            _report("1741615200", '{"0": {"neuroncore_utilization": -3}}'),
            "line 1: `neuron_runtime_data[0].report.neuroncore_counters.neuroncores_in_use.0"
            ".neuroncore_utilization` is -3, below 0 %",
        ),
        (
            _report("1741615200", "{}", error="failed to read counters"),
            "no NeuronCore utilization in the file: line 1: `neuron_runtime_data[0].report"
            ".neuroncore_counters.error` is 'failed to read counters'",
        ),
        (
            b'{"timestamp": 1741615200, "neuron_runtime_data": []}\n' * 2,
            "no NeuronCore utilization in the file: `neuron_runtime_data` is empty in every report",
        ),
        (
            b'{"timestamp": 1741615200, "neuron_runtime_data": [{"pid": 7, "report": {}}]}',
            "no NeuronCore utilization in the file: no report has `neuroncore_counters`",
        ),
        (
            b'[{"timestamp": 1741615200, "neuron_runtime_data": {}}]',
            "`[0]`: `neuron_runtime_data` is not a list; not a neuron-monitor report",
        ),
    ],
)
def test_neuron_monitor_errors_name_the_line_and_field(data: bytes, message: str) -> None:
    with pytest.raises(ArtifactError) as error:
        convert(data, filename="neuron.jsonl")
    assert str(error.value).startswith(message), str(error.value)


def test_neuron_monitor_cores_of_two_applications_are_capped_at_100() -> None:
    data = (
        b'{"timestamp": 1741615200, "neuron_runtime_data": ['
        b'{"report": {"neuroncore_counters": {"neuroncores_in_use": '
        b'{"0": {"neuroncore_utilization": 70}}}}}, '
        b'{"report": {"neuroncore_counters": {"neuroncores_in_use": '
        b'{"0": {"neuroncore_utilization": 45}}}}}]}'
    )
    artifact = convert(data, filename="neuron.json")
    assert artifact.telemetry == (
        TelemetrySample(timestamp_s=T0, gpu_index=0, utilization_pct=100.0),
    )
    assert artifact.assumptions == (ADDED_CORE_0,)
