"""The vendored plotly.js partial bundle matches the pinned plotly package and draws every
trace type the charts build (static/vendor/plotly/PROVENANCE.md)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from plotly.offline import get_plotlyjs_version

from config.staticfiles import PLOTLY_STATIC_PATH

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "static" / PLOTLY_STATIC_PATH
RECIPE = REPO / "docker" / "plotly-bundle"
# The trace types the bundle draws: plotly.js's core holds scatter, the recipe registers the rest
# (tests/browser/test_chart_axes.py asks the built bundle itself).
BUNDLE_TRACES = {"bar", "heatmap", "histogram", "scatter"}
CHART_CODE = ("audit_app", "benchmarks_app")


def test_the_bundle_is_the_plotly_js_the_pinned_package_ships() -> None:
    head = BUNDLE.read_text(encoding="utf-8")[:300]
    found = re.search(r"plotly\.js \(bar, heatmap, histogram, scatter - minified\) v(\S+)", head)
    assert found, head
    assert found.group(1) == get_plotlyjs_version()
    recipe = json.loads((RECIPE / "package.json").read_text(encoding="utf-8"))
    assert recipe["dependencies"]["plotly.js"] == get_plotlyjs_version()


def test_the_recipe_registers_the_trace_types_the_bundle_names() -> None:
    entry = (RECIPE / "index.js").read_text(encoding="utf-8")
    registered = set(re.findall(r"require\('plotly\.js/lib/([a-z0-9]+)'\)", entry))
    assert registered == {"core"} | BUNDLE_TRACES - {"scatter"}


def test_the_bundle_is_the_file_its_provenance_names() -> None:
    provenance = (BUNDLE.parent / "PROVENANCE.md").read_text(encoding="utf-8")
    digest = hashlib.sha256(BUNDLE.read_bytes()).hexdigest()
    assert f"sha256: `{digest}`" in provenance
    assert (BUNDLE.parent / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


def test_every_trace_type_the_charts_build_is_in_the_bundle() -> None:
    used: dict[str, set[str]] = {}
    for package in CHART_CODE:
        for path in (REPO / package).rglob("*.py"):
            for name in re.findall(r"\bgo\.([A-Z][A-Za-z0-9]*)\(", path.read_text("utf-8")):
                if name not in {"Figure", "Layout"}:
                    used.setdefault(name.lower(), set()).add(str(path.relative_to(REPO)))
            for name in re.findall(
                r"[\"']type[\"']\s*:\s*[\"']([a-z0-9]+)[\"']", path.read_text("utf-8")
            ):
                if name in _ALL_TRACE_TYPES:
                    used.setdefault(name, set()).add(str(path.relative_to(REPO)))
    assert {"bar", "scatter"} <= set(used)  # the scan finds the charts at all
    missing = {name: files for name, files in used.items() if name not in BUNDLE_TRACES}
    assert not missing, f"trace types the plotly.js bundle cannot draw: {missing}"


# Every trace type plotly.js knows, so a figure written as a plain dict is checked too.
_ALL_TRACE_TYPES = {
    "bar",
    "barpolar",
    "box",
    "candlestick",
    "carpet",
    "choropleth",
    "choroplethmap",
    "choroplethmapbox",
    "cone",
    "contour",
    "contourcarpet",
    "densitymap",
    "densitymapbox",
    "funnel",
    "funnelarea",
    "heatmap",
    "histogram",
    "histogram2d",
    "histogram2dcontour",
    "icicle",
    "image",
    "indicator",
    "isosurface",
    "mesh3d",
    "ohlc",
    "parcats",
    "parcoords",
    "pie",
    "sankey",
    "scatter",
    "scatter3d",
    "scattercarpet",
    "scattergeo",
    "scattergl",
    "scattermap",
    "scattermapbox",
    "scatterpolar",
    "scatterpolargl",
    "scattersmith",
    "scatterternary",
    "splom",
    "streamtube",
    "sunburst",
    "surface",
    "table",
    "treemap",
    "violin",
    "volume",
    "waterfall",
}
