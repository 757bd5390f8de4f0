"""GPU telemetry for utilization and power: nvidia-smi CSV or DCGM exporter text.

**nvidia-smi** — `nvidia-smi --query-gpu=timestamp,index,utilization.gpu,power.draw
--format=csv -l 1`: a header with units in brackets (`timestamp, index, utilization.gpu [%],
power.draw [W]`) and values such as `2025/03/10 14:00:01.123, 0, 45 %, 250.12 W`.
`--format=csv,nounits` (bare values) reads the same. Other query columns are allowed; `name` and
`driver_version` fill `gpu_type` / `driver`. `power.draw.average` / `.instant` (newer drivers)
stand in for `power.draw`. `[N/A]` / `[Not Supported]` mean "no value". nvidia-smi writes local
time without a zone: it is read as UTC, said in an assumption. A column without a unit in its
header or its values is read in nvidia-smi's only unit (% or W), also said.

**DCGM exporter** — the Prometheus text that dcgm-exporter serves at `/metrics`, one or more
scrapes concatenated, **each sample with its Prometheus timestamp** (milliseconds since the
epoch, the exposition format's optional last field):

    DCGM_FI_DEV_GPU_UTIL{gpu="0",modelName="NVIDIA H100 80GB HBM3",...} 87 1741615201000
    DCGM_FI_DEV_POWER_USAGE{gpu="0",...} 612.5 1741615201000

`DCGM_FI_DEV_GPU_UTIL` (%) and `DCGM_FI_DEV_POWER_USAGE` (W) with the same `gpu` label and
timestamp make one sample; other series and `#` lines are skipped. A sample without a timestamp
is refused (a plain `curl …/metrics` loop loses the time of each scrape), naming its line.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone

from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact, TelemetrySample
from benchmarks_app.converters.base import decode_text, head_text, to_float, to_int

TOOL = "telemetry"
DCGM_UTIL = "DCGM_FI_DEV_GPU_UTIL"
DCGM_POWER = "DCGM_FI_DEV_POWER_USAGE"
POWER_COLUMNS = ("power.draw", "power.draw.average", "power.draw.instant")

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
    if f"{DCGM_UTIL}" in head or f"{DCGM_POWER}" in head:
        return not head.startswith(("{", "["))
    first = head.split("\n", 1)[0].lower()
    return "timestamp" in first and ("utilization.gpu" in first or "power.draw" in first)


def convert(data: bytes, *, filename: str) -> BenchmarkArtifact:
    text = decode_text(data)
    head = head_text(data)
    if DCGM_UTIL in head or DCGM_POWER in head:
        return _convert_dcgm(text)
    return _convert_nvidia_smi(text)


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
