"""Template filters for the chart partial: ``{% load chart_tags %}``."""

from __future__ import annotations

from typing import Any

from django import template

from audit_app.reporting import charts

register = template.Library()


@register.filter
def chart_is_empty(figure: Any) -> bool:
    """True when the figure (a dict from a ``charts.py`` builder) has no data point to draw."""
    return charts.is_empty(figure if isinstance(figure, dict) else None)
