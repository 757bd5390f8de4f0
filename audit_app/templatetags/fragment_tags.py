"""`{% data_fragment "name" value ... %}...{% end_data_fragment %}`: a part of a page rendered
once per data version.

Long tables of rollup-derived rows are most of some pages' time (Django renders about 20,000
template nodes for 100 reconciliation rows), while their content only changes with the data. The
fragment's HTML is kept in the results cache (`audit_app.lib.results_cache`) under the current
data version, the fragment's name and the values it varies on: a new upload, a deleted one or
an edited price card renders it afresh. Only wrap markup that depends on nothing but the data
and those values: no CSRF token, user name or role-dependent link inside.
"""

from __future__ import annotations

from django import template
from django.template.base import FilterExpression, NodeList, Parser, Token
from django.template.context import Context
from django.utils.safestring import SafeString, mark_safe

from audit_app.lib.results_cache import cached

register = template.Library()


class DataFragmentNode(template.Node):
    def __init__(self, nodelist: NodeList, name: FilterExpression, vary_on: list[FilterExpression]):
        self.nodelist = nodelist
        self.name = name
        self.vary_on = vary_on

    def render(self, context: Context) -> SafeString:
        values = [repr(value.resolve(context)) for value in self.vary_on]
        key = "\x1f".join([str(self.name.resolve(context)), *values])
        html = cached("fragment", key, lambda: str(self.nodelist.render(context)))
        return mark_safe(html)  # noqa: S308 - the template's own rendered (escaped) output


@register.tag("data_fragment")
def data_fragment(parser: Parser, token: Token) -> DataFragmentNode:
    bits = token.split_contents()
    if len(bits) < 2:
        raise template.TemplateSyntaxError(
            "'data_fragment' needs a name, then the values the fragment varies on"
        )
    nodelist = parser.parse(("end_data_fragment",))
    parser.delete_first_token()
    return DataFragmentNode(
        nodelist, parser.compile_filter(bits[1]), [parser.compile_filter(b) for b in bits[2:]]
    )
