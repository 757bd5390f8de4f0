"""Template filters over `audit_app.lib.formatting`: ``{% load formatting %}``.

``{{ amount|money }}``, ``{{ amount|money:row.currency }}``, ``{{ price|money_unit }}``,
``{{ p95_ms|duration }}``, ``{{ share|percent }}``, ``{{ change|percent_change }}``,
``{{ rows|count }}``, ``{{ tokens_per_s|number:1 }}``. A value that is not a number is shown
as it is rather than failing the page (Django's filters fail quietly too).

``{{ event.to_status|label:"recommendation_status" }}``: a stored choice key (in a history, an
audit event or a gate's inputs, where no ``get_FOO_display`` reaches) as its label, from
`LABELS`; a key the map does not know is shown as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import template

from audit_app.costs.costing import ScalingMode
from audit_app.lib import formatting
from audit_app.models import Recommendation, Upload, WorkloadClass

register = template.Library()


def _quietly(format_value: Callable[[Any], str], value: Any) -> Any:
    try:
        return format_value(value)
    except ValueError:
        return value


@register.filter
def money(value: Any, currency: str = "USD") -> Any:
    return _quietly(lambda v: formatting.money(v, currency or "USD"), value)


@register.filter
def money_unit(value: Any, currency: str = "USD") -> Any:
    return _quietly(lambda v: formatting.money_unit(v, currency or "USD"), value)


@register.filter
def duration(value: Any) -> Any:
    return _quietly(formatting.duration, value)


@register.filter
def percent(value: Any) -> Any:
    return _quietly(formatting.percent, value)


@register.filter
def percent_change(value: Any) -> Any:
    return _quietly(formatting.percent_change, value)


@register.filter
def count(value: Any) -> Any:
    return _quietly(formatting.count, value)


@register.filter
def number(value: Any, decimals: Any = 1) -> Any:
    try:
        places = int(decimals)
    except (TypeError, ValueError):
        places = 1
    return _quietly(lambda v: formatting.number(v, places), value)


# Each kind of stored key a page shows outside a model field, with its labels.
LABELS: dict[str, dict[str, str]] = {
    "recommendation_status": dict(Recommendation.Status.choices),
    "target_kind": dict(Recommendation.TargetKind.choices),
    "workload_class": dict(WorkloadClass.choices),
    "scaling_mode": {mode.value: mode.label for mode in ScalingMode},
    "upload_status": dict(Upload.Status.choices),
}


@register.filter
def label(value: Any, kind: str) -> Any:
    """``value``'s label among the ``kind`` keys of `LABELS`; unknown values as they are."""
    if value is None or value == "":
        return value
    return LABELS[kind].get(str(value), value)
