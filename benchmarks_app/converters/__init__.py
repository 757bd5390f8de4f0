"""Benchmark-artifact converters: one module per tool, registered in one table.

Every converter has the same two functions (and, when one file can hold a sweep,
`convert_points(data, *, filename) -> tuple[BenchmarkArtifact, ...]`, one artifact per load point):
- `sniff(data: bytes, filename: str) -> bool`: does the file look like this tool's result?
  (It reads the first 64 KiB only.)
- `convert(data: bytes, *, filename: str) -> BenchmarkArtifact`: read the whole file into the
  contract of `benchmarks_app.artifacts` (the definitions of `docs/methods.md`,
  milliseconds). A file that
  cannot be read raises `ArtifactError` with one sentence naming the field or line; a sensible
  default is taken instead when one exists, and said in `assumptions`.

`convert` here is the entry point: it detects the format (unless one is forced), checks that a
forced format matches the file, and delegates. Detection tries `DETECTION_ORDER`; the first
`sniff` that accepts wins. GenAI-Perf comes before AIPerf because their exports share a shape
and only GenAI-Perf's markers tell them apart (an unmarked export is read as AIPerf).
"""

from __future__ import annotations

from typing import Protocol

from audit_app.ingestion.reading import AUTO_FORMAT
from benchmarks_app.artifacts import ArtifactError, BenchmarkArtifact
from benchmarks_app.converters import aiperf, guidellm, llmd, llmperf, mlperf, telemetry, vllm
from benchmarks_app.converters.base import decode_text

__all__ = [
    "CONVERTERS",
    "DETECTION_ORDER",
    "ArtifactError",
    "convert",
    "convert_points",
    "detect_format",
]


class Converter(Protocol):
    """What every converter provides."""

    def sniff(self, data: bytes, filename: str) -> bool: ...

    def convert(self, data: bytes, *, filename: str) -> BenchmarkArtifact: ...


CONVERTERS: dict[str, Converter] = {
    "vllm": vllm,
    "guidellm": guidellm,
    "aiperf": aiperf,
    "genai-perf": aiperf.GENAI_PERF,
    "llmperf": llmperf,
    "telemetry": telemetry,
    "mlperf": mlperf,
    "llm-d": llmd,
}
DETECTION_ORDER = (
    "telemetry",
    "mlperf",
    "llm-d",
    "guidellm",
    "llmperf",
    "genai-perf",
    "aiperf",
    "vllm",
)

EXPECTED = (
    "expected a vLLM bench serve result (`duration`, `completed`, `output_throughput`), a "
    "GuideLLM report (`benchmarks`), an AIPerf / GenAI-Perf profile export (`request_latency` "
    "with a `unit`, or a `Metric,avg,…` CSV), an LLMPerf summary or individual responses "
    "(`results_…`, `ttft_s`), an MLPerf LoadGen `mlperf_log_summary.txt`, an llm-d benchmark "
    "report, or accelerator telemetry (nvidia-smi CSV, DCGM exporter text, neuron-monitor JSON)"
)


def detect_format(data: bytes, filename: str) -> str:
    """The name of the first converter (in `DETECTION_ORDER`) that recognises the file."""
    decode_text(data)  # empty, binary and non-UTF-8 files fail here with their own sentence
    for name in DETECTION_ORDER:
        if CONVERTERS[name].sniff(data, filename):
            return name
    raise ArtifactError(f"the file is not a recognised benchmark result: {EXPECTED}")


def convert(data: bytes, *, filename: str = "", format: str = AUTO_FORMAT) -> BenchmarkArtifact:
    """Convert one tool's result file; ArtifactError (one sentence) when it cannot be read.
    A file holding a sweep gives its first point here; `convert_points` gives them all."""
    return convert_points(data, filename=filename, format=format)[0]


def convert_points(
    data: bytes, *, filename: str = "", format: str = AUTO_FORMAT
) -> tuple[BenchmarkArtifact, ...]:
    """Every load point of one tool's result file, in the file's order (one artifact per point;
    a converter module with `convert_points` gives several, any other one)."""
    if format != AUTO_FORMAT and format not in CONVERTERS:
        known = ", ".join([AUTO_FORMAT, *CONVERTERS])
        raise ArtifactError(f"unknown benchmark format {format!r}; expected one of {known}")
    if format == AUTO_FORMAT:
        format = detect_format(data, filename)
    elif not CONVERTERS[format].sniff(data, filename):
        decode_text(data)
        try:
            actual = detect_format(data, filename)
        except ArtifactError:
            actual = None
        looks_like = f" (it looks like {actual})" if actual else ""
        raise ArtifactError(f"the file is not {format} output{looks_like}")
    module = CONVERTERS[format]
    try:
        many = getattr(module, "convert_points", None)
        if many is not None:
            points = tuple(many(data, filename=filename))
            if not points:
                raise ArtifactError("the file holds no benchmark result")
            return points
        return (module.convert(data, filename=filename),)
    except ArtifactError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as error:
        # A structure no converter anticipated: still one sentence, never a traceback.
        raise ArtifactError(
            f"the file could not be read as {format} output ({type(error).__name__}: {error})"
        ) from None
