"""The one registry of upload formats: each format's name, kind, label and description.

Every token-log and billing importer module declares how it is shown (`LABEL`, the upload
form's choice) and named in a sentence (`DESCRIPTION`); its family's table
(`audit_app.ingestion.token_logs.IMPORTERS`,
`audit_app.ingestion.billing_exports.BILLING_IMPORTERS`) gives its name, kind
and, through `DETECTION_ORDER` and each module's `sniff`, how it is detected. The upload form,
the uploads service, `manage.py ingest` and `audit_app.ingestion.file_kinds` take names, kinds and
labels
from here instead of spelling them again.

Benchmark artifacts are converted in `benchmarks_app.converters`, which `audit_app` never
imports, so their names are listed here for the uploads service and the benchmark front ends;
`tests/audit_app/ingestion/test_formats.py` checks that the list matches the converters' table.

Pure: no Django; the kind names are those of `audit_app.models.Upload.Kind`.
"""

from __future__ import annotations

from dataclasses import dataclass

from audit_app.ingestion import billing_exports as billing
from audit_app.ingestion import token_logs as importers
from audit_app.ingestion.reading import AUTO_FORMAT

__all__ = [
    "AUTO_FORMAT",
    "AUTO_KIND",
    "BENCHMARK",
    "BENCHMARK_FORMATS",
    "BILLING",
    "FORMATS",
    "FORMATS_BY_KIND",
    "FORMAT_LABELS",
    "KIND_LABELS",
    "KIND_NOUNS",
    "TOKEN_LOG",
    "Format",
]

# `auto` as a kind: detect token log vs billing export from the file
# (`audit_app.ingestion.file_kinds`).
AUTO_KIND = "auto"
TOKEN_LOG = "token_log"
BILLING = "billing"
BENCHMARK = "benchmark"

# As `Upload.Kind` labels them (the upload form's choices), and as a sentence names them.
KIND_LABELS = {TOKEN_LOG: "Token / request log", BILLING: "Billing export"}
KIND_NOUNS = {TOKEN_LOG: "a token log", BILLING: "a billing export"}
AUTO_FORMAT_LABEL = "Detect automatically"


@dataclass(frozen=True, kw_only=True)
class Format:
    """One format a token log or billing export can be uploaded in."""

    name: str  # as the form, the API and `manage.py ingest` send it
    kind: str  # TOKEN_LOG or BILLING
    label: str  # the upload form's choice (the importer module's LABEL)
    description: str  # how a sentence names such a file (the module's DESCRIPTION)


FORMATS: dict[str, Format] = {
    **{
        name: Format(name=name, kind=TOKEN_LOG, label=module.LABEL, description=module.DESCRIPTION)
        for name, module in importers.IMPORTERS.items()
    },
    **{
        name: Format(name=name, kind=BILLING, label=module.LABEL, description=module.DESCRIPTION)
        for name, module in billing.BILLING_IMPORTERS.items()
    },
}
BENCHMARK_FORMATS = (
    AUTO_FORMAT,
    "vllm",
    "guidellm",
    "aiperf",
    "genai-perf",
    "llmperf",
    "mlperf",
    "llm-d",
    "telemetry",
)


def _names_of(kind: str) -> tuple[str, ...]:
    return (AUTO_FORMAT, *(name for name, found in FORMATS.items() if found.kind == kind))


# The formats each kind accepts, `auto` first. A file sent as `auto` kind may name any token-log
# or billing format, which then sets its kind.
FORMATS_BY_KIND: dict[str, tuple[str, ...]] = {
    AUTO_KIND: (AUTO_FORMAT, *FORMATS),
    TOKEN_LOG: _names_of(TOKEN_LOG),
    BILLING: _names_of(BILLING),
    BENCHMARK: BENCHMARK_FORMATS,
}
FORMAT_LABELS = {
    AUTO_FORMAT: AUTO_FORMAT_LABEL,
    **{name: found.label for name, found in FORMATS.items()},
}
