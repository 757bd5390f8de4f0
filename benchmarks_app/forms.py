"""Benchmark input shared by the front ends: the page's forms, the run fields a caller may
state, the serving modes a gate prices, and `KEY=VALUE` pairs from the command line."""

from __future__ import annotations

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


def meta_from_pairs(pairs: Sequence[str] | None) -> dict[str, str]:
    """`KEY=VALUE` command-line pairs as run fields; RunRefused names a pair without `=`."""
    meta: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise RunRefused(f"--meta expects KEY=VALUE, got {pair!r}", field="meta")
        meta[key.strip()] = value.strip()
    return meta


class RunForm(forms.Form):
    file = forms.FileField(label="Result file")
    telemetry = forms.FileField(label="GPU telemetry CSV (optional)", required=False)
    format = forms.ChoiceField(label="Format", choices=[(f, f) for f in BENCHMARK_FORMATS])
    name = forms.CharField(label="Name", required=False)
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
    recommendation = forms.ModelChoiceField(
        queryset=Recommendation.objects.all(),
        required=False,
        label="For recommendation (approved for a pilot, on dedicated hardware)",
    )

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
