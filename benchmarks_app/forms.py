"""Benchmark input shared by the front ends: the page's forms, the run fields a caller may
state, the serving modes a gate prices, and `KEY=VALUE` pairs from the command line."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

from django import forms

from audit_app.ingestion.formats import BENCHMARK_FORMATS
from audit_app.models import Recommendation
from benchmarks_app import gating
from benchmarks_app.converters.base import METADATA_KEYS
from benchmarks_app.metrics import RUN_FIELD_NAMES
from benchmarks_app.models import BenchmarkRun
from benchmarks_app.runs import RunRefused
from benchmarks_app.selectors import gateable_recommendations

# The run fields a form, an API call or `--meta` may state: the model, and the metadata names a
# file may carry.
META_KEYS = (
    "model",
    *METADATA_KEYS,
    "serving",
    "provider",
    "usd_per_million_input",
    "usd_per_million_output",
    "canonical_model",
)
# What an edit of a stored run may set: every run field (a single point's load included).
EDITABLE_KEYS = RUN_FIELD_NAMES
SCALING_MODES = tuple(mode.value for mode in gating.ScalingMode)


def stated_meta(values: Mapping[str, Any]) -> dict[str, str]:
    """The run fields among ``values`` (form or request data) that were given a value."""
    return {key: str(values[key]) for key in META_KEYS if values.get(key) not in (None, "")}


def tolerances_from_pairs(pairs: Sequence[str]) -> dict[str, float]:
    """`METRIC=PERCENT` pairs (command-line options, or the page's lines) as the gate's allowed
    regressions; ValueError naming the pair that is not one. The metrics themselves are checked
    by the gate, which names the known ones."""
    allowed: dict[str, float] = {}
    for pair in pairs:
        if not pair.strip():
            continue
        key, sep, value = pair.partition("=")
        try:
            pct = float(value.strip().removesuffix("%"))
        except ValueError:
            pct = math.nan
        if not sep or not key.strip() or not (math.isfinite(pct) and pct >= 0):
            raise ValueError(
                f"expected METRIC=PERCENT (e.g. tpot_p95_ms=25), a percentage ≥ 0, got {pair!r}"
            )
        allowed[key.strip()] = pct
    return allowed


def meta_from_pairs(pairs: Sequence[str] | None) -> dict[str, str]:
    """`KEY=VALUE` command-line pairs as run fields; RunRefused names a pair without `=`."""
    meta: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise RunRefused(f"--meta expects KEY=VALUE, got {pair!r}", field="meta")
        meta[key.strip()] = value.strip()
    return meta


# How the pages name each run field (`metrics.RunFields`): lower case, to sit in a sentence
# ("Run 4 updated: quantization → int4"); tables and forms capitalise the first letter.
RUN_FIELD_LABELS: Mapping[str, str] = {
    "model": "model",
    "canonical_model": "canonical model (matched across providers)",
    "model_hash": "model hash",
    "quantization": "quantization",
    "serving": "serving",
    "provider": "API provider",
    "usd_per_million_input": "$ per 1M input tokens (hosted API)",
    "usd_per_million_output": "$ per 1M output tokens (hosted API)",
    "batch_size": "server max batch size",
    "num_gpus": "accelerators per replica",
    "gpu_type": "accelerator type",
    "usd_per_gpu_hour": "$ per accelerator-hour",
    "gpu_utilization_pct": "GPU utilization % (stated, when no telemetry)",
    "watts_per_gpu": "watts per accelerator (stated, when no telemetry)",
    "usd_per_kwh": "$ per kWh",
    "dataset": "dataset",
    "input_len": "input length (tokens)",
    "output_len": "output length (tokens)",
    "request_rate": "request rate (req/s; empty = unlimited)",
    "concurrency": "client concurrency",
}
SERVING_CHOICES = [
    ("", "Not stated (self-hosted unless an API provider is named)"),
    ("self-hosted", "Self-hosted (own accelerators)"),
    ("hosted", "Hosted API (priced per token)"),
]


def field_label(key: str) -> str:
    """A run field's label as a form or table shows it ("Quantization", "$ per kWh")."""
    label = RUN_FIELD_LABELS.get(key, key.replace("_", " "))
    return label[:1].upper() + label[1:]


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one field (`<input type="file" multiple>`): cleans to a list, each file
    checked as a single FileField would check it (an error names the file when there are
    several)."""

    widget = MultipleFileInput

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        files = [f for f in (data if isinstance(data, list | tuple) else [data]) if f]
        if not files:
            return [super().clean(None, initial)]  # "This field is required."
        cleaned = []
        for each in files:
            try:
                cleaned.append(super().clean(each, initial))
            except forms.ValidationError as exc:
                if len(files) == 1:
                    raise
                name = getattr(each, "name", "") or "a file"
                raise forms.ValidationError([f"{name}: {m}" for m in exc.messages]) from None
        return cleaned


class RunForm(forms.Form):
    file = MultipleFileField(
        label="Result files",
        help_text="One file, or several (a sweep: one file per load, AIPerf folders' exports) "
        "imported together as one run; pick them all at once.",
    )
    telemetry = forms.FileField(
        label="Accelerator telemetry: nvidia-smi CSV, DCGM text or neuron-monitor JSON (optional)",
        required=False,
    )
    format = forms.ChoiceField(label="Format", choices=[(f, f) for f in BENCHMARK_FORMATS])
    name = forms.CharField(label="Name", required=False)
    serving = forms.ChoiceField(label="Serving", choices=SERVING_CHOICES, required=False)
    provider = forms.CharField(label="API provider (hosted API)", required=False)
    usd_per_million_input = forms.CharField(
        label="$ per 1M input tokens (hosted API)", required=False
    )
    usd_per_million_output = forms.CharField(
        label="$ per 1M output tokens (hosted API)", required=False
    )
    canonical_model = forms.CharField(
        label="Canonical model (to match another provider's spelling)", required=False
    )
    model_hash = forms.CharField(label="Model hash", required=False)
    quantization = forms.CharField(label="Quantization", required=False)
    batch_size = forms.CharField(label="Server max batch size", required=False)
    num_gpus = forms.CharField(label="Accelerators", required=False)
    gpu_type = forms.CharField(label="Accelerator type", required=False)
    usd_per_gpu_hour = forms.CharField(label="$ per accelerator-hour", required=False)
    gpu_utilization_pct = forms.CharField(
        label="GPU utilization % (when no telemetry is attached)", required=False
    )
    dataset = forms.CharField(label="Dataset", required=False)
    input_len = forms.CharField(label="Input length", required=False)
    output_len = forms.CharField(label="Output length", required=False)


class RunEditForm(forms.Form):
    """A stored run's name and every run field, shown with its current value; `changes` gives
    only the fields whose value was changed (an emptied field clears it)."""

    name = forms.CharField(label="Name", max_length=200)

    def __init__(self, *args: Any, run: BenchmarkRun, **kwargs: Any) -> None:
        self.current = {key: _shown_value(run.fields.get(key)) for key in EDITABLE_KEYS}
        kwargs.setdefault("initial", {**self.current, "name": run.name})
        super().__init__(*args, **kwargs)
        for key in EDITABLE_KEYS:
            if key == "serving":
                self.fields[key] = forms.ChoiceField(
                    label=field_label(key), choices=SERVING_CHOICES, required=False
                )
            else:
                self.fields[key] = forms.CharField(label=field_label(key), required=False)

    def changes(self) -> dict[str, str]:
        return {
            key: self.cleaned_data.get(key) or ""
            for key in EDITABLE_KEYS
            if (self.cleaned_data.get(key) or "") != self.current[key]
        }


def _shown_value(value: Any) -> str:
    return "" if value is None else str(value)


class GateForm(forms.Form):
    baseline = forms.ModelChoiceField(queryset=BenchmarkRun.objects.all(), label="Baseline run")
    candidate = forms.ModelChoiceField(queryset=BenchmarkRun.objects.all(), label="Candidate run")
    mode = forms.ChoiceField(
        label="Serving mode",
        choices=[(mode.value, mode.label.capitalize()) for mode in gating.ScalingMode],
    )
    cold_start_seconds = forms.FloatField(label="Cold start (s)", initial=0, min_value=0)
    traffic_csv = forms.CharField(
        label="Traffic (CSV hour,output_tokens; empty = always busy)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
    )
    traffic_workload = forms.CharField(
        label="Or price on a workload's last 30 days (workload name)", required=False
    )
    slo_ttft_ms = forms.FloatField(
        label="p95 TTFT limit (ms)",
        required=False,
        help_text="Optional SLO: each side's operating point is its highest-throughput point "
        "within the limits.",
    )
    slo_tpot_ms = forms.FloatField(label="p95 TPOT limit (ms)", required=False)
    tolerances = forms.CharField(
        label="Allowed regressions (one METRIC=PERCENT a line; default 0 %)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "tpot_p95_ms=25\nttft_p95_ms=10"}),
        help_text="Metrics: "
        + ", ".join(
            f"{key} ({label})" for key, label in gating.LABELS.items() if key in gating.BETTER
        )
        + ". Error rate is in percentage points (default 0.5).",
    )
    recommendation = forms.ModelChoiceField(
        queryset=Recommendation.objects.all(),
        required=False,
        label="For recommendation (approved for a pilot, on dedicated hardware)",
    )

    def clean_tolerances(self) -> dict[str, float]:
        try:
            return tolerances_from_pairs(self.cleaned_data["tolerances"].splitlines())
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the recommendations a gate may verify are offered. One that stopped being
        # gateable after the page was loaded is still accepted here, so the service records
        # the gate and says why it refused the link, as the API and the command do.
        field = cast(forms.ModelChoiceField, self.fields["recommendation"])
        field.widget.choices = [
            ("", field.empty_label),
            *((r.pk, str(r)) for r in gateable_recommendations()),
        ]
