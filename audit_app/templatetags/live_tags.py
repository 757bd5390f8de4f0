"""Template filters for live ingestion: ``{% load live_tags %}``, then
``{{ upload.stream_source|live_source }}`` names a live source as the pages say it."""

from __future__ import annotations

from typing import Any

from django import template

from audit_app.ingestion.live.selectors import source_label

register = template.Library()


@register.filter
def live_source(value: Any) -> str:
    return source_label(str(value))
