"""HTML forms."""

from __future__ import annotations

from django import forms

from audit_app.models import Upload
from audit_app.services.uploads import TOKEN_LOG_FORMATS

FORMAT_LABELS = {
    "auto": "Detect automatically",
    "litellm": "LiteLLM spend logs (CSV, JSON, JSONL)",
    "otel": "OpenTelemetry GenAI spans (OTLP JSON)",
    "generic": "Generic CSV / JSONL (canonical columns)",
}


class UploadForm(forms.Form):
    file = forms.FileField(
        label="File",
        help_text="A token or request log. It is stored as-is and ingested in the background.",
    )
    kind = forms.ChoiceField(
        label="Kind",
        choices=[(Upload.Kind.TOKEN_LOG, Upload.Kind.TOKEN_LOG.label)],
        initial=Upload.Kind.TOKEN_LOG,
    )
    format = forms.ChoiceField(
        label="Format",
        choices=[(name, FORMAT_LABELS[name]) for name in TOKEN_LOG_FORMATS],
        initial="auto",
        help_text="Detected from the header or keys; override it if detection guesses wrong.",
    )
