"""The filters' one-click windows (`audit_app.reporting.filters.quick_windows`) as links."""

from __future__ import annotations

from typing import Any

from django import template

from audit_app.reporting.filters import SpendFilters, quick_windows

register = template.Library()


@register.simple_tag
def quick_window_links(filters: SpendFilters) -> list[dict[str, Any]]:
    """One link per quick window, keeping the page's team, provider and model filters; the
    window shown now is marked ``current``."""
    return [
        {
            "days": (window.end - window.start).days + 1,
            "query": filters.with_range(window.start, window.end).query_string(),
            "current": (window.start, window.end) == (filters.start, filters.end),
        }
        for window in quick_windows()
    ]
