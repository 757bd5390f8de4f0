"""How a format's field table is written: one `Field` per canonical field.

Each importer with a fast path states its fields once, as a table of `Field`s (target field ->
sources in priority order, kind, required or not): `litellm_fields` and `otel_fields`. Its row
path and its columnar path both read their names, paths and types from that table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from enum import Enum

from audit_app.ingestion.token_logs.base import SourceFields
from audit_app.ingestion.token_logs.coerce import first_text


class Kind(Enum):
    """What a source holds, which decides how it is read and typed in a columnar schema."""

    TEXT = "text"
    TIMESTAMP = "timestamp"
    COUNT = "count"  # a whole number of tokens
    DECIMAL = "decimal"  # an amount of money
    FLAG = "flag"  # a boolean
    TEXTS = "texts"  # a list of texts


@dataclass(frozen=True)
class Field:
    """Where one field comes from: `sources` in priority order (the first present one wins;
    for a text, the first that is not blank), its kind, whether the first source must be
    present in the file, and the name a reject gives it when not its first source."""

    sources: tuple[str, ...]
    kind: Kind
    required: bool = False
    named: str | None = None

    @property
    def name(self) -> str:
        """How a reject names this field: the file's own name for it."""
        return self.named or self.sources[0]

    @property
    def only(self) -> str:
        """The one source of a field read from one place."""
        (source,) = self.sources
        return source

    def value(self, source_value: Callable[[str], object]) -> object:
        """This field's value, given each source's raw value: its one source's raw value, else
        the first text that is not blank (texts) or the first value present (anything else)."""
        if len(self.sources) == 1:
            return source_value(self.sources[0])
        values = [source_value(source) for source in self.sources]
        if self.kind is Kind.TEXT:
            return first_text(*values)
        return next((value for value in values if value is not None), None)


def source_fields(table: Mapping[str, Field], **names: str) -> SourceFields:
    """The names rejects give the canonical fields: each table field's `name`, then `names`."""
    known = {field.name for field in fields(SourceFields)}
    return SourceFields(**{key: field.name for key, field in table.items() if key in known} | names)
