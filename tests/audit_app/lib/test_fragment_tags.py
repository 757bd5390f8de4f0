"""`{% data_fragment %}`: a fragment is rendered once per data version and per value it varies
on, and afresh after any data change."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import caches
from django.template import Context, Template, TemplateSyntaxError
from django.test import override_settings

from audit_app.lib import results_cache
from tests.audit_app.lib.test_results_cache import LOCMEM

pytestmark = pytest.mark.django_db

TEMPLATE = Template(
    "{% load fragment_tags %}<p>{% data_fragment 'rows' page %}{{ counter.next }}:{{ name }}"
    "{% end_data_fragment %}</p>"
)


class Counter:
    """Counts renders of the fragment's body: each `next` is one render."""

    def __init__(self) -> None:
        self.calls = 0

    def next(self) -> int:
        self.calls += 1
        return self.calls


@pytest.fixture
def cache_on() -> Any:
    with override_settings(CACHES=LOCMEM):
        caches["results"].clear()
        yield
        caches["results"].clear()


def _render(counter: Counter, *, page: int, name: str = "<b>") -> str:
    return TEMPLATE.render(Context({"counter": counter, "page": page, "name": name}))


def test_a_fragment_is_rendered_once_per_data_version_and_value(cache_on: None) -> None:
    counter = Counter()
    first = _render(counter, page=1)
    assert first == "<p>1:&lt;b&gt;</p>"  # escaped as the template escapes it, not twice
    assert _render(counter, page=1) == first  # the kept HTML, the body not rendered again
    assert counter.calls == 1
    assert _render(counter, page=2) == "<p>2:&lt;b&gt;</p>"  # another value, its own fragment
    assert counter.calls == 2


def test_a_data_change_renders_the_fragment_again(cache_on: None) -> None:
    counter = Counter()
    assert _render(counter, page=1, name="old") == "<p>1:old</p>"
    results_cache.data_changed()
    assert _render(counter, page=1, name="new") == "<p>2:new</p>"
    assert counter.calls == 2


def test_a_fragment_without_a_name_is_a_template_error() -> None:
    with pytest.raises(TemplateSyntaxError, match="needs a name"):
        Template("{% load fragment_tags %}{% data_fragment %}x{% end_data_fragment %}")
