"""HTML forms."""

from __future__ import annotations

from typing import Any

from django import forms

from audit_app.ingestion.formats import AUTO_FORMAT, AUTO_KIND, FORMAT_LABELS, FORMATS_BY_KIND
from audit_app.ingestion.uploads import UPLOAD_KINDS
from audit_app.models import Upload

KIND_LABELS = {
    AUTO_KIND: "Detect from the file (token log or billing export)",
    **{kind.value: kind.label for kind in (Upload.Kind.TOKEN_LOG, Upload.Kind.BILLING)},
}


class UploadForm(forms.Form):
    file = forms.FileField(
        label="File",
        help_text="A token log or a billing export. It is stored as-is and ingested in the "
        "background.",
    )
    kind = forms.ChoiceField(
        label="Kind",
        choices=[(kind, KIND_LABELS[kind]) for kind in UPLOAD_KINDS],
        initial=AUTO_KIND,
        help_text="Detected from the file's columns or keys unless you choose; a file of the "
        "other kind is refused, naming the kind it is.",
    )
    format = forms.ChoiceField(
        label="Format",
        choices=[(name, FORMAT_LABELS[name]) for name in FORMATS_BY_KIND[AUTO_KIND]],
        initial=AUTO_FORMAT,
        help_text="Detected from the header or keys; override it if detection guesses wrong.",
    )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        kind, fmt = data.get("kind"), data.get("format")
        if kind and fmt and fmt not in FORMATS_BY_KIND[str(kind)]:
            self.add_error("format", f"{FORMAT_LABELS[fmt]} is not a {Upload.Kind(kind).label}.")
        return data
