"""Pagination of every list the API answers, in one envelope.

``?limit=`` (default ``PAGE_SIZE``, 100; at most 1,000) and ``?offset=`` (from 0) select a page;
a value that is not a whole number in range is a 400 naming the parameter, never a silent
default. Every list answer is ``{"count", "next", "previous", "results"}``; a report answer
(spend, reconciliation, bills) puts its whole-set figures beside those four keys, so a client
walks any list the same way: follow ``next`` and collect ``results``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.settings import api_settings

from audit_app.lib.query_params import QueryParams, int_param

MAX_LIMIT = 1_000
# Far past any list this product holds; keeps the number a database OFFSET takes as it is.
MAX_OFFSET = 1_000_000_000

T = TypeVar("T")


def parse_limit(params: QueryParams, *, default: int) -> int:
    """``?limit=``: how many items a page holds, 1 to MAX_LIMIT; absent or empty: ``default``."""
    return int_param(params, "limit", default=default, minimum=1, maximum=MAX_LIMIT)


def parse_offset(params: QueryParams) -> int:
    """``?offset=``: how many items come before the page, 0 to MAX_OFFSET; absent or empty: 0."""
    return int_param(params, "offset", default=0, minimum=0, maximum=MAX_OFFSET)


class ApiPagination(LimitOffsetPagination):
    """DRF's limit/offset pagination with strict parameters (the project's default class)."""

    default_limit: int = cast(int, api_settings.PAGE_SIZE)  # settings.REST_FRAMEWORK sets it
    max_limit = MAX_LIMIT

    def get_limit(self, request: Request) -> int:
        return parse_limit(request.query_params, default=self.default_limit)

    def get_offset(self, request: Request) -> int:
        return parse_offset(request.query_params)


@dataclass(frozen=True, kw_only=True)
class Page(Generic[T]):
    """One page of an ordered list: its items and where it sits in the whole set."""

    items: list[T]
    count: int
    next: str | None
    previous: str | None

    def envelope(self, results: list[Any]) -> dict[str, Any]:
        """The page's keys of the answer, ``results`` being its items as presented."""
        return {
            "count": self.count,
            "next": self.next,
            "previous": self.previous,
            "results": results,
        }


def paginate(items: Sequence[T] | QuerySet[Any, T], request: Request) -> Page[T]:
    """The page ``?limit=&offset=`` asks for. ``items`` must be in a stable order (ties broken
    by id or name) so that consecutive pages neither overlap nor skip."""
    pagination = ApiPagination()
    # Parsed before counting, so a bad parameter costs no query.
    pagination.get_limit(request)
    pagination.get_offset(request)
    # Never None: get_limit always gives a limit.
    page = pagination.paginate_queryset(items, request) or []
    assert pagination.count is not None  # paginate_queryset counted
    return Page(
        items=page,
        count=pagination.count,
        next=pagination.get_next_link(),
        previous=pagination.get_previous_link(),
    )


class PageOutput(serializers.Serializer):
    """The keys every paginated answer has; a subclass adds ``results`` (and report figures)."""

    count = serializers.IntegerField(help_text="Items in the whole set, over all pages.")
    next = serializers.URLField(
        allow_null=True, help_text="The next page's URL; null on the last page."
    )
    previous = serializers.URLField(
        allow_null=True, help_text="The previous page's URL; null on the first page."
    )


PAGE_PARAMETERS = [
    OpenApiParameter(
        "limit",
        int,
        description=f"Items per page, 1 to {MAX_LIMIT:,} (default {api_settings.PAGE_SIZE}).",
    ),
    OpenApiParameter(
        "offset", int, description="Items before the page, from 0 (default 0).", default=0
    ),
]
