"""Shared pieces of the benchmark converters: reading the bytes, numbers, units, messages.

Every converter reads a whole file (benchmark results are small) and raises `ArtifactError` with
one sentence naming the field or line when it cannot. Conventions fixed here for all tools:
- Text must be UTF-8 (a BOM is dropped); JSON errors name the line and column, and a file that
  stops in the middle says so ("truncated?").
- A number may be an int, a float or a numeric string ("1,234.56" from a CSV export); `null`,
  "", "N/A" and NaN mean "not in the file", never zero.
- Times convert by an explicit unit (`ns`, `us`, `ms`, `s`); a unit the code does not know is an
  error, never a guess.
- A file holding several load points (a sweep) gives one artifact per point; a point that cannot
  be read names its place in the file (`benchmarks[2].metrics …`, `line 3: …`).
- Requests that failed are counted in `failed_requests` and said in one sentence
  (`failure_assumption`); the latencies are those of the requests that completed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import numpy as np

from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact

HEAD_BYTES = 64 * 1024
UTF8_BOM = "\ufeff"

# The run fields a file may carry at top level (vLLM `--metadata`, LLMPerf `--metadata`); the
# names are those of `BenchmarkArtifact.metadata`.
METADATA_KEYS = (
    "model_hash",
    "quantization",
    "batch_size",
    "num_gpus",
    "gpu_type",
    "usd_per_gpu_hour",
    "gpu_utilization_pct",
    "container_image",
    "driver",
    "operator",
    "dataset",
    "input_len",
    "output_len",
)

# Keys of `BenchmarkArtifact.reported`, built as f"{metric}_{stat}_ms".
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2e")

TIME_UNITS_TO_MS = {
    "ns": 1e-6,
    "nanoseconds": 1e-6,
    "us": 1e-3,
    "µs": 1e-3,
    "microseconds": 1e-3,
    "ms": 1.0,
    "milliseconds": 1.0,
    "s": 1000.0,
    "sec": 1000.0,
    "secs": 1000.0,
    "second": 1000.0,
    "seconds": 1000.0,
}
# "per sec" is GenAI-Perf's spelling; the others are AIPerf's and common variants.
PER_SECOND_UNITS = frozenset(
    {
        "per sec",
        "/s",
        "/sec",
        "tokens/sec",
        "tokens/s",
        "tok/s",
        "requests/sec",
        "requests/s",
        "req/s",
    }
)
MISSING_TEXT = frozenset({"", "null", "none", "nan", "n/a", "[n/a]", "[not supported]", "-"})


@dataclass(frozen=True, kw_only=True)
class ToolConverter:
    """A converter that is one module's functions under another tool name."""

    name: str
    sniff: Callable[[bytes, str], bool]
    convert: Callable[..., BenchmarkArtifact]


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def decode_text(data: bytes) -> str:
    """The whole file as text; ArtifactError for empty, binary or non-UTF-8 files."""
    if not data.strip():
        raise ArtifactError("the file is empty")
    if data.startswith(b"\x1f\x8b"):
        raise ArtifactError("the file is gzip-compressed; upload the uncompressed result file")
    if data.startswith(b"PK\x03\x04"):
        raise ArtifactError("the file is a ZIP archive; upload the result file inside it")
    nul_at = data.find(b"\x00")
    if nul_at >= 0:
        raise ArtifactError(f"the file looks binary (NUL byte at byte {nul_at})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ArtifactError(f"not valid UTF-8 at byte {error.start}") from None
    return text.lstrip(UTF8_BOM)


def head_text(data: bytes) -> str:
    """The first 64 KiB as text for sniffing (a character cut at the end is dropped)."""
    return data[:HEAD_BYTES].decode("utf-8", errors="ignore").lstrip(UTF8_BOM).lstrip()


def json_error_sentence(error: json.JSONDecodeError, text: str) -> str:
    if not text[error.pos :].strip() or _unclosed(text):
        last_line = text.rstrip().count("\n") + 1
        return f"the JSON ends early at line {last_line} (truncated file?)"
    return f"not valid JSON at line {error.lineno}, column {error.colno}: {error.msg}"


def _unclosed(text: str) -> bool:
    """Does the text stop inside a string or with a bracket still open (a cut-off file)?"""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
    return in_string or depth > 0


def load_json(data: bytes) -> Any:
    """Parse a JSON document; ArtifactError naming the line when it is not one."""
    text = decode_text(data)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ArtifactError(json_error_sentence(error, text)) from None
    except RecursionError:
        raise ArtifactError("not valid JSON: nested too deeply") from None


JSON_LINES = object()  # `json_or_lines`: the text is several JSON values, one a line


def json_or_lines(text: str) -> Any:
    """One JSON document, or `JSON_LINES` when the text holds several values one after another
    (JSON lines: the caller reads them a line at a time); ArtifactError naming the line for
    anything else."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ArtifactError("not valid JSON: nested too deeply") from None
    except json.JSONDecodeError as error:
        if error.msg != "Extra data":
            raise ArtifactError(json_error_sentence(error, text)) from None
        return JSON_LINES


def has_json_key(head: str, *keys: str) -> bool:
    """Does any of `keys` appear as a JSON object key (`"key":`) in the head?"""
    return any(re.search(rf'"{re.escape(key)}"\s*:', head) for key in keys)


def require_object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ArtifactError(f"{what} is not a JSON object")
    return value


# ---------------------------------------------------------------------------------------------
# Numbers and units
# ---------------------------------------------------------------------------------------------


def to_float(value: Any, field: str) -> float | None:
    """A number from the file, None when absent; ArtifactError naming `field` when not a number."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ArtifactError(f"`{field}` is {value!r}, not a number")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip().replace(",", "")
        if text.lower() in MISSING_TEXT:
            return None
        try:
            number = float(text)
        except ValueError:
            raise ArtifactError(f"`{field}` is {value!r}, not a number") from None
    else:
        raise ArtifactError(f"`{field}` is a {type(value).__name__}, not a number")
    if math.isnan(number):
        return None
    return number


def to_int(value: Any, field: str) -> int | None:
    number = to_float(value, field)
    if number is None:
        return None
    if math.isinf(number) or number != int(number):
        raise ArtifactError(f"`{field}` is {value!r}, not a whole number")
    return int(number)


def number_list(values: Any, field: str) -> list[float]:
    """A JSON list of numbers; ArtifactError naming the field and index otherwise."""
    if not isinstance(values, list):
        raise ArtifactError(f"`{field}` is not a list")
    if values and set(map(type, values)) <= {int, float}:
        # The common case at C speed (100k numbers a request array); a NaN falls through to
        # the loop below, which names its index.
        array = np.asarray(values, dtype=float)
        if not np.isnan(array).any():
            return cast(list[float], array.tolist())
    out = []
    for index, value in enumerate(values):
        number = to_float(value, f"{field}[{index}]")
        if number is None:
            raise ArtifactError(f"`{field}[{index}]` is empty")
        out.append(number)
    return out


def ms_per_unit(unit: Any, field: str) -> float:
    """Milliseconds per one `unit` (ms, s, us, ns); ArtifactError for anything else."""
    key = str(unit).strip().lower()
    if key not in TIME_UNITS_TO_MS:
        raise ArtifactError(f"`{field}` has unit {unit!r}; expected ms, s, us or ns")
    return TIME_UNITS_TO_MS[key]


def check_per_second(unit: Any, field: str) -> None:
    if str(unit).strip().lower() not in PER_SECOND_UNITS:
        raise ArtifactError(f"`{field}` has unit {unit!r}; expected a rate per second")


def metadata_from(record: Mapping[str, Any]) -> dict[str, str]:
    """The run fields (`METADATA_KEYS`) found at the top level of a record, as strings."""
    found = {}
    for key in METADATA_KEYS:
        value = record.get(key)
        if value is None or isinstance(value, Mapping | list):
            continue
        text = str(value).strip()
        if text:
            found[key] = text
    return found


def relative_starts(starts: Sequence[float]) -> tuple[float, ...]:
    """Send times relative to the first one."""
    if not starts:
        return ()
    first = min(starts)
    return tuple(start - first for start in starts)


def fmt(number: float) -> str:
    """A number for an assumption sentence: 6 significant digits, thousands separated."""
    return f"{number:.6g}" if abs(number) < 1000 else f"{number:,.0f}"


# ---------------------------------------------------------------------------------------------
# Load points
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """The load one point ran at: `label` as the tool names it, `known` False when the file
    records neither a rate nor a concurrency, `request_rate` None = unlimited (when known)."""

    label: str
    known: bool = True
    request_rate: float | None = None
    max_concurrency: int | None = None


UNKNOWN_LOAD = Load(label="", known=False)


def rate_text(rate: float) -> str:
    """A request rate for a label: 4.0 → "4", 2.5 → "2.5"."""
    return f"{rate:g}"


def failure_assumption(failed: int | None, completed: int | None) -> str | None:
    """The sentence said when requests failed, e.g. "49 of 150 requests failed (32.7 %);
    latencies are over the 101 that completed."; None when none failed or a count is unknown."""
    if not failed or completed is None:
        return None
    total = failed + completed
    share = f"{failed} of {total} requests failed ({100.0 * failed / total:.1f} %)"
    if not completed:
        return f"{share}; no request completed, so there are no latencies."
    return f"{share}; latencies are over the {completed} that completed."


def epoch_seconds(text: Any) -> tuple[float, bool] | None:
    """An ISO 8601 date-time as seconds since the epoch, and whether it carried a time zone (one
    without is read as UTC, as nvidia-smi timestamps are); None when the text is not one."""
    value = str(text).strip()
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC).timestamp(), False
    return moment.timestamp(), True


def no_window(field: str, value: Any, expected: str = "an ISO 8601 date-time") -> str:
    """The sentence said when a point's start or end time cannot be read: the window is only
    used to pick the point's telemetry, so the file is still read, without one."""
    return f"`{field}` is {value!r}, not {expected}, so the point has no time window."
