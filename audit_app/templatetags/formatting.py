"""Template filters over `audit_app.lib.formatting`: ``{% load formatting %}``.

``{{ amount|money }}``, ``{{ amount|money:row.currency }}``, ``{{ price|money_unit }}``,
``{{ p95_ms|duration }}``, ``{{ share|percent }}``, ``{{ change|percent_change }}``,
``{{ rows|count }}``, ``{{ tokens_per_s|number:1 }}``. A value that is not a number is shown
as it is rather than failing the page (Django's filters fail quietly too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import template

from audit_app.lib import formatting

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
