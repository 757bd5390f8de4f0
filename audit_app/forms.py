"""HTML forms."""

from __future__ import annotations

from django import forms

from audit_app.models import Upload
from audit_app.services.uploads import BILLING_FORMATS, TOKEN_LOG_FORMATS

FORMAT_LABELS = {
    "auto": "Detect automatically",
    "litellm": "LiteLLM spend logs (CSV, JSON, JSONL)",
    "otel": "OpenTelemetry GenAI spans (OTLP JSON)",
    "generic": "Generic CSV / JSONL (canonical columns)",
    "focus": "FOCUS 1.0-1.3 billing export (CSV, Parquet)",
    "aws-cur": "AWS Cost and Usage Report (legacy or 2.0)",
    "azure": "Azure cost details (EA or MCA)",
}


class UploadForm(forms.Form):
    file = forms.FileField(
        label="File",
        help_text="A token log or a billing export. It is stored as-is and ingested in the "
        "background.",
    )
    kind = forms.ChoiceField(
        label="Kind",
        choices=[
            (Upload.Kind.TOKEN_LOG, Upload.Kind.TOKEN_LOG.label),
            (Upload.Kind.BILLING, Upload.Kind.BILLING.label),
        ],
        initial=Upload.Kind.TOKEN_LOG,
    )
    format = forms.ChoiceField(
        label="Format",
        choices=[
            (name, FORMAT_LABELS[name])
            for name in dict.fromkeys(TOKEN_LOG_FORMATS + BILLING_FORMATS)
        ],
        initial="auto",
        help_text="Detected from the header or keys; override it if detection guesses wrong.",
    )

    def clean(self) -> dict[str, object]:
        data = super().clean()
        kind, fmt = data.get("kind"), data.get("format")
        allowed = TOKEN_LOG_FORMATS if kind == Upload.Kind.TOKEN_LOG else BILLING_FORMATS
        if fmt and fmt not in allowed:
            self.add_error("format", f"{FORMAT_LABELS[fmt]} is not a {Upload.Kind(kind).label}.")
        return data
