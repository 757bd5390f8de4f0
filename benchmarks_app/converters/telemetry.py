"""Accelerator telemetry for utilization and power: nvidia-smi CSV, DCGM exporter text or
neuron-monitor JSON.

Its rules in full: `docs/formats.md`, section "Accelerator telemetry".
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact, TelemetrySample
from benchmarks_app.converters.base import (
    JSON_LINES,
    decode_text,
    epoch_seconds,
    has_json_key,
    head_text,
    json_or_lines,
    require_object,
    to_float,
    to_int,
)

TOOL = "telemetry"
DCGM_UTIL = "DCGM_FI_DEV_GPU_UTIL"
DCGM_POWER = "DCGM_FI_DEV_POWER_USAGE"
POWER_COLUMNS = ("power.draw", "power.draw.average", "power.draw.instant")
NEURON_RUNTIMES = "neuron_runtime_data"  # the key every neuron-monitor report has
NEURON_TIMESTAMP = "timestamp"  # added when recording (neuron-monitor writes no time)
NEURON_RECIPE = "neuron-monitor | jq -c --unbuffered '{timestamp: now} + .'"
# Seconds since the epoch beyond this (the year 5138) are milliseconds, not seconds.
LARGEST_EPOCH_S = 1e11

_TIMESTAMP = re.compile(
    r"^(?P<date>\d{4}[/-]\d{2}[/-]\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<fraction>\d+))?"
    r"\s*(?P<zone>Z|UTC|[+-]\d{2}:?\d{2})?$",
    re.IGNORECASE,
)
_PROM_SAMPLE = re.compile(
    r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)"
    r"(?:\s+(?P<timestamp>-?\d+))?\s*$"
)
_PROM_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
_HEADER_CELL = re.compile(r"^(?P<name>[^\[]*?)\s*(?:\[(?P<unit>[^\]]*)\])?$")


def sniff(data: bytes, filename: str) -> bool:
    head = head_text(data)
    if _is_neuron_monitor(head):
        return True
    if f"{DCGM_UTIL}" in head or f"{DCGM_POWER}" in head:
        return not head.startswith(("{", "["))
    first = head.split("\n", 1)[0].lower()
    return "timestamp" in first and ("utilization.gpu" in first or "power.draw" in first)


def convert(data: bytes, *, filename: str) -> BenchmarkArtifact:
    text = decode_text(data)
    head = head_text(data)
    if _is_neuron_monitor(head):
        return _convert_neuron_monitor(text)
    if DCGM_UTIL in head or DCGM_POWER in head:
        return _convert_dcgm(text)
    return _convert_nvidia_smi(text)


def _is_neuron_monitor(head: str) -> bool:
    """JSON (a report, a line of reports or an array of them) with neuron-monitor's top key."""
    return head.startswith(("{", "[")) and has_json_key(head, NEURON_RUNTIMES)


# ---------------------------------------------------------------------------------------------
# nvidia-smi
# ---------------------------------------------------------------------------------------------


# A header column's position and the unit in its brackets (None: no unit, `--format=csv,nounits`).
_Columns = dict[str, tuple[int, str | None]]


def _convert_nvidia_smi(text: str) -> BenchmarkArtifact:
    rows = csv.reader(io.StringIO(text), skipinitialspace=True)
    header = next(rows, None)
    if not header:
        raise ArtifactError("line 1: the telemetry CSV has no header")
    columns = _header_columns(header)
    power_column = _checked_power_column(columns)
    assumptions = []
    if "index" not in columns:
        assumptions.append("The CSV has no `index` column; every row was read as GPU 0.")

    samples = []
    names, drivers = set(), set()
    unlabelled: set[str] = set()
    zone_missing = False
    for line_number, row in enumerate(rows, start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise ArtifactError(
                f"line {line_number}: {len(row)} values under a {len(header)}-column header"
            )
        cell = {name: row[position].strip() for name, (position, _unit) in columns.items()}
        if cell["timestamp"].lower() == "timestamp":
            continue  # a second header, from concatenated runs
        sample, has_zone = _row_sample(cell, columns, power_column, line_number, unlabelled)
        zone_missing = zone_missing or not has_zone
        samples.append(sample)
        if cell.get("name"):
            names.add(cell["name"])
        if cell.get("driver_version"):
            drivers.add(cell["driver_version"])
    if not samples:
        raise ArtifactError("the telemetry CSV has a header but no samples")
    if zone_missing:
        assumptions.append("nvidia-smi timestamps carry no time zone; they were read as UTC.")
    for column in sorted(unlabelled):
        unit = "%" if column == "utilization.gpu" else "W"
        assumptions.append(f"`{column}` had no unit; read as {unit}, nvidia-smi's only unit.")
    return _artifact(samples, names, drivers, assumptions)


def _header_columns(header: Sequence[str]) -> _Columns:
    """Each header cell's lower-cased name, with its position and bracketed unit."""
    columns: _Columns = {}
    for position, title in enumerate(header):
        match = _HEADER_CELL.match(title.strip())
        name = match["name"].strip().lower() if match else title.strip().lower()
        columns[name] = (position, match["unit"].strip() if match and match["unit"] else None)
    return columns


def _checked_power_column(columns: _Columns) -> str | None:
    """The power column in use (None: utilization only), once the header has a timestamp, a
    utilization or power column, and only nvidia-smi's units (% and W)."""
    if "timestamp" not in columns:
        raise ArtifactError(
            "line 1: no `timestamp` column; expected the nvidia-smi header "
            "`timestamp, index, utilization.gpu [%], power.draw [W]` (--format=csv)"
        )
    power_column = next((c for c in POWER_COLUMNS if c in columns), None)
    if "utilization.gpu" not in columns and power_column is None:
        raise ArtifactError("line 1: neither `utilization.gpu` nor `power.draw` is a column")
    for column, unit in (("utilization.gpu", "%"), (power_column, "W")):
        if column in columns and columns[column][1] not in (None, unit):
            raise ArtifactError(f"line 1: `{column}` is in {columns[column][1]}; expected {unit}")
    return power_column


def _row_sample(
    cell: Mapping[str, str],
    columns: _Columns,
    power_column: str | None,
    line_number: int,
    unlabelled: set[str],
) -> tuple[TelemetrySample, bool]:
    """One CSV row as a sample, and whether its timestamp carried a time zone. A value without
    a unit in its cell or header adds its column to `unlabelled`."""
    timestamp, has_zone = _parse_timestamp(cell["timestamp"], line_number)
    utilization = power = None
    if "utilization.gpu" in columns:
        utilization = _with_unit(
            cell["utilization.gpu"],
            "%",
            "utilization.gpu",
            columns["utilization.gpu"][1],
            line_number,
            unlabelled,
        )
    if power_column is not None:
        power = _with_unit(
            cell[power_column], "W", power_column, columns[power_column][1], line_number, unlabelled
        )
    index = _index(cell["index"], line_number) if "index" in columns else 0
    sample = TelemetrySample(
        timestamp_s=timestamp, gpu_index=index, utilization_pct=utilization, power_w=power
    )
    return sample, has_zone


def _with_unit(
    value: str,
    unit: str,
    column: str,
    header_unit: str | None,
    line_number: int,
    unlabelled: set[str],
) -> float | None:
    text = value.strip()
    if text.lower() in ("", "[n/a]", "n/a", "[not supported]", "[unknown error]"):
        return None
    if text.endswith(unit):
        text = text[: -len(unit)].strip()
    elif header_unit is None:
        unlabelled.add(column)
    try:
        return float(text)
    except ValueError:
        raise ArtifactError(
            f"line {line_number}: `{column}` is {value!r}, not a number in {unit}"
        ) from None


def _index(value: str, line_number: int) -> int:
    try:
        return int(value)
    except ValueError:
        raise ArtifactError(f"line {line_number}: `index` is {value!r}, not a GPU index") from None


def _parse_timestamp(value: str, line_number: int) -> tuple[float, bool]:
    """Seconds since the epoch and whether the text named its zone (naive = UTC)."""
    match = _TIMESTAMP.match(value.strip())
    if match is None:
        raise ArtifactError(
            f"line {line_number}: `timestamp` is {value!r}; expected nvidia-smi's "
            "YYYY/MM/DD HH:MM:SS.mmm"
        )
    zone = match["zone"]
    tz = UTC
    if zone and zone.upper() not in ("Z", "UTC"):
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    date = match["date"].replace("/", "-")
    fraction = (match["fraction"] or "0")[:6].ljust(6, "0")
    try:
        moment = datetime.fromisoformat(f"{date}T{match['time']}.{fraction}").replace(tzinfo=tz)
    except ValueError:
        raise ArtifactError(f"line {line_number}: `timestamp` {value!r} is not a date") from None
    return moment.timestamp(), zone is not None


# ---------------------------------------------------------------------------------------------
# DCGM exporter (Prometheus text)
# ---------------------------------------------------------------------------------------------


def _convert_dcgm(text: str) -> BenchmarkArtifact:
    # (timestamp ms, gpu) -> [utilization, power]
    readings: dict[tuple[int, int], list[float | None]] = {}
    names, drivers = set(), set()
    for line_number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _PROM_SAMPLE.match(line)
        if match is None:
            raise ArtifactError(f"line {line_number}: not a Prometheus sample line")
        name = match["name"]
        if name not in (DCGM_UTIL, DCGM_POWER):
            continue
        labels = dict(_PROM_LABEL.findall(match["labels"] or ""))
        if "gpu" not in labels:
            raise ArtifactError(f"line {line_number}: {name} has no `gpu` label")
        if match["timestamp"] is None:
            raise ArtifactError(
                f"line {line_number}: {name} has no timestamp; save each sample with its "
                "Prometheus timestamp (ms since the epoch)"
            )
        gpu = to_int(labels["gpu"], f"line {line_number} gpu label")
        value = to_float(match["value"], f"line {line_number} {name}")
        slot = readings.setdefault((int(match["timestamp"]), gpu or 0), [None, None])
        slot[0 if name == DCGM_UTIL else 1] = value
        if labels.get("modelName"):
            names.add(labels["modelName"])
        if labels.get("DCGM_FI_DRIVER_VERSION"):
            drivers.add(labels["DCGM_FI_DRIVER_VERSION"])
    if not readings:
        raise ArtifactError(f"no {DCGM_UTIL} or {DCGM_POWER} samples in the file")
    samples = [
        TelemetrySample(
            timestamp_s=timestamp_ms / 1000.0,
            gpu_index=gpu,
            utilization_pct=utilization,
            power_w=power,
        )
        for (timestamp_ms, gpu), (utilization, power) in readings.items()
    ]
    return _artifact(samples, names, drivers, [])


# ---------------------------------------------------------------------------------------------
# neuron-monitor (JSON reports)
# ---------------------------------------------------------------------------------------------


@dataclass
class _NeuronNotes:
    """What the reports said besides utilization: why a runtime gave no counters, and which
    cores several applications reported in one report."""

    runtimes: int = 0  # `neuron_runtime_data` entries seen in all reports
    errors: list[str] = field(default_factory=list)  # "line 3: …neuroncore_counters.error: …"
    added: set[int] = field(default_factory=set)  # cores whose utilizations were added
    naive_times: bool = False  # an ISO 8601 timestamp without a zone, read as UTC


def _convert_neuron_monitor(text: str) -> BenchmarkArtifact:
    notes = _NeuronNotes()
    samples = []
    device_types = set()
    for where, report in _neuron_reports(text):
        timestamp = _report_time(report, where, notes)
        for core, utilization in _core_utilization(report, where, notes).items():
            samples.append(
                TelemetrySample(timestamp_s=timestamp, gpu_index=core, utilization_pct=utilization)
            )
        hardware = report.get("neuron_hardware_info")
        if isinstance(hardware, Mapping) and str(hardware.get("neuron_device_type") or "").strip():
            device_types.add(str(hardware["neuron_device_type"]).strip())
    if not samples:
        raise ArtifactError(f"no NeuronCore utilization in the file: {_no_samples_reason(notes)}")
    assumptions = []
    if notes.naive_times:
        assumptions.append("neuron-monitor timestamps carry no time zone; they were read as UTC.")
    if notes.added:
        cores = ", ".join(str(core) for core in sorted(notes.added))
        assumptions.append(
            f"Several Neuron applications reported NeuronCore {cores} in one report; their "
            "utilizations were added (at most 100 %)."
        )
    return _artifact(samples, device_types, set(), assumptions)


def _neuron_reports(text: str) -> list[tuple[str, Mapping[str, Any]]]:
    """Every report with its place: `line N` (one report a line), `[i]` (a JSON array) or
    `the report` (one report laid out over several lines)."""
    value = json_or_lines(text)
    if value is JSON_LINES:
        return _neuron_lines(text)
    if isinstance(value, list):
        if not value:
            raise ArtifactError("the file is an empty JSON array; expected neuron-monitor reports")
        return [
            (f"`[{index}]`", require_object(item, f"`[{index}]`"))
            for index, item in enumerate(value)
        ]
    where = "line 1" if "\n" not in text.strip() else "the report"
    return [(where, require_object(value, "the file"))]


def _neuron_lines(text: str) -> list[tuple[str, Mapping[str, Any]]]:
    reports = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            reports.append((where, require_object(json.loads(line), where)))
        except RecursionError:
            raise ArtifactError(f"{where}: not valid JSON: nested too deeply") from None
        except json.JSONDecodeError as error:
            if not line[error.pos :].strip():
                raise ArtifactError(f"{where}: the report ends early (truncated file?)") from None
            raise ArtifactError(
                f"{where}: not valid JSON at column {error.colno}: {error.msg}"
            ) from None
    return reports


def _report_time(report: Mapping[str, Any], where: str, notes: _NeuronNotes) -> float:
    """The report's `timestamp` in seconds since the epoch."""
    if NEURON_TIMESTAMP not in report:
        raise ArtifactError(
            f"{where}: the report has no `{NEURON_TIMESTAMP}`; neuron-monitor writes no time of "
            f"its own, so stamp each report as it is recorded: `{NEURON_RECIPE}`"
        )
    value = report[NEURON_TIMESTAMP]
    expected = "expected seconds since the epoch (jq's `now`) or an ISO 8601 date-time"
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = float(value)
        except ValueError:
            parsed = epoch_seconds(value)
            if parsed is not None:
                seconds, has_zone = parsed
                notes.naive_times = notes.naive_times or not has_zone
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        raise ArtifactError(f"{where}: `{NEURON_TIMESTAMP}` is {value!r}; {expected}")
    if seconds > LARGEST_EPOCH_S:
        raise ArtifactError(
            f"{where}: `{NEURON_TIMESTAMP}` is {value!r}, too large for seconds since the epoch "
            f"(milliseconds?); {expected}"
        )
    return seconds


def _core_utilization(
    report: Mapping[str, Any], where: str, notes: _NeuronNotes
) -> dict[int, float | None]:
    """NeuronCore index → utilization % in one report, over every application that reports it."""
    runtimes = report.get(NEURON_RUNTIMES)
    if not isinstance(runtimes, list):
        state = "missing" if runtimes is None else "not a list"
        raise ArtifactError(f"{where}: `{NEURON_RUNTIMES}` is {state}; not a neuron-monitor report")
    readings: dict[int, list[float]] = {}
    for position, runtime in enumerate(runtimes):
        path = f"{NEURON_RUNTIMES}[{position}]"
        runtime = require_object(runtime, f"{where}: `{path}`")
        notes.runtimes += 1
        in_use = _neuroncores_in_use(runtime, where, path, notes)
        for key, core in in_use.items():
            core_path = f"{path}.report.neuroncore_counters.neuroncores_in_use.{key}"
            index = _core_index(key, where, core_path)
            values = readings.setdefault(index, [])
            core = require_object(core, f"{where}: `{core_path}`")
            try:
                value = to_float(
                    core.get("neuroncore_utilization"), f"{core_path}.neuroncore_utilization"
                )
            except ArtifactError as error:
                raise ArtifactError(f"{where}: {error}") from None
            if value is not None and value < 0:
                raise ArtifactError(
                    f"{where}: `{core_path}.neuroncore_utilization` is {value:g}, below 0 %"
                )
            if value is not None:
                values.append(value)
    return {index: _added(index, values, notes) for index, values in readings.items()}


def _neuroncores_in_use(
    runtime: Mapping[str, Any], where: str, path: str, notes: _NeuronNotes
) -> Mapping[str, Any]:
    """One application's `neuroncores_in_use` ({} when its counters are absent or failed, the
    reason kept in `notes`)."""
    part = runtime.get("report")
    counters = part.get("neuroncore_counters") if isinstance(part, Mapping) else None
    if not isinstance(counters, Mapping):
        error = str(runtime.get("error") or "").strip()
        if error:
            notes.errors.append(f"{where}: `{path}.error` is {error!r}")
        return {}
    error = str(counters.get("error") or "").strip()
    if error:
        notes.errors.append(f"{where}: `{path}.report.neuroncore_counters.error` is {error!r}")
        return {}
    in_use = counters.get("neuroncores_in_use")
    if in_use is None:
        return {}
    if not isinstance(in_use, Mapping):
        raise ArtifactError(
            f"{where}: `{path}.report.neuroncore_counters.neuroncores_in_use` is not an object"
        )
    return in_use


def _core_index(key: str, where: str, path: str) -> int:
    if not key.isdigit():
        raise ArtifactError(f"{where}: `{path}`: {key!r} is not a NeuronCore index")
    return int(key)


def _added(index: int, values: list[float], notes: _NeuronNotes) -> float | None:
    """One core's utilization: the applications' sum, at most 100 %; None when none had one."""
    if not values:
        return None
    if sum(1 for value in values if value) > 1:
        notes.added.add(index)
        return min(100.0, sum(values))
    return sum(values)


def _no_samples_reason(notes: _NeuronNotes) -> str:
    if notes.errors:
        return notes.errors[0]
    if not notes.runtimes:
        return (
            f"`{NEURON_RUNTIMES}` is empty in every report (no Neuron application was running "
            "while neuron-monitor recorded)"
        )
    return (
        "no report has `neuroncore_counters` with a NeuronCore in use; enable that metric "
        "group for the application in the neuron-monitor configuration"
    )


def _artifact(
    samples: Sequence[TelemetrySample],
    names: set[str],
    drivers: set[str],
    assumptions: list[str],
) -> BenchmarkArtifact:
    metadata: Mapping[str, str] = {
        key: next(iter(values))
        for key, values in (("gpu_type", names), ("driver", drivers))
        if len(values) == 1
    }
    ordered = sorted(samples, key=lambda sample: (sample.timestamp_s, sample.gpu_index))
    return BenchmarkArtifact(
        tool=TOOL,
        telemetry=tuple(ordered),
        metadata=metadata,
        assumptions=tuple(assumptions),
    )
