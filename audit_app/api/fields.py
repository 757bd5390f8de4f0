"""Serializer fields the API shares: money as recorded, exactly (`lib/formatting.decimal_text`)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from audit_app.lib.formatting import decimal_text


@extend_schema_field({"type": "string", "format": "decimal", "example": "8.5450077867419368"})
class ExactMoneyField(serializers.Field):
    """A recorded amount (a bill line's, an upload's logged cost) as the database holds it: a
    decimal string in plain digits without trailing zeros, never a float. Read only."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["read_only"] = True
        super().__init__(**kwargs)

    def to_representation(self, value: Decimal) -> str:
        return decimal_text(value)
