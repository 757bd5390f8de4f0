"""Read speed at scale: a year of hourly rollups for 200 workloads, on PostgreSQL.

The database `audit_scale` is filled once (1,752,000 hourly rollups with three latency
histograms each, and the daily rollups derived from them) and reused while its marker matches
GENERATION; then each page and API endpoint is requested 3 times to warm up and 50 times timed,
in-process through Django's test client with production settings (DEBUG off), so the figure is
server time: URL routing, queries, pricing, histogram merging, charts and rendering.

Each endpoint is timed with its default filters (the 30 days ending on the last data day) and
over the whole year. Set BENCH_SCALE_REQUESTS to change the 50, BENCH_SCALE_DATABASE_URL to use
another database.

Then the first visitor after a data change (target: <= 1 s): a new data version as
an ingest makes, the derived refresh as the worker runs it (re-classify, re-price, then warm
the default and quick windows), then one request to each year-long page; beside it, the
yardstick: the same first request after a change with no warm-up (what every first visitor
waited before the year was warmed).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.ingest import run_child
from bench.report import markdown_table, write_section

REPO = Path(__file__).resolve().parent.parent
BENCH_DIR = REPO / "var" / "bench"
PG_ADMIN_URL = "postgresql://postgres:postgres@127.0.0.1:5432/postgres"
PG_SCALE_URL = "postgres://postgres:postgres@127.0.0.1:5432/audit_scale"
WORKLOADS = 200
DAYS = 365
GENERATION = f"scale-v3-{WORKLOADS}x{DAYS}"
TARGET_MS = 250.0
FIRST_VISIT_TARGET_MS = 1000.0

CHILD_FILL = r"""
import json, sys, time
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
import numpy as np
import django
django.setup()
from django.db import connection, transaction
from django.utils import timezone
from audit_app.costs.pricing import LONG_CONTEXT_THRESHOLD_TOKENS
from audit_app.ingestion.daily import PRICING_SUM_FIELDS
from audit_app.ingestion.histograms import LatencyHistogram, bin_indices
from audit_app.models import DailyRollup, HourlyRollup, PriceCard, Upload, Workload

generation, n_workloads, n_days = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
marker = Upload.objects.filter(sha256=generation, status=Upload.Status.SUCCEEDED).first()
if marker is not None and HourlyRollup.objects.filter(upload=marker).exists():
    print(json.dumps({"reused": True, "hourly": HourlyRollup.objects.count(),
                      "daily": DailyRollup.objects.count()}))
    sys.exit(0)
t0 = time.perf_counter()
Upload.objects.all().delete()
Workload.objects.all().delete()
rng = np.random.default_rng(7)
last_day = timezone.now().date()
first_day = last_day - timedelta(days=n_days - 1)
cards = sorted({(c.provider, c.model) for c in PriceCard.objects.all()})[:8]
teams = [f"team-{i:02d}" for i in range(12)]
upload = Upload.objects.create(
    kind=Upload.Kind.TOKEN_LOG, format="litellm", status=Upload.Status.SUCCEEDED,
    file=f"bench/{generation}.csv", original_name=f"{generation}.csv", sha256=generation,
    finished_at=timezone.now(),
)
purposes = ["chat", "rag", "eval", "embed", "agent"]
names = [f"wl-{i:03d}-{purposes[i % 5]}" for i in range(n_workloads)]
Workload.objects.bulk_create([Workload(name=n) for n in names])

# A pool of hourly histograms per latency scale: each a real histogram of 10..60 lognormal
# samples, kept in its stored binary form (hourly rows) and as dense counts (to sum a day
# exactly).
WINDOW = 2400
def pool(median_ms, size=48):
    out = []
    for _ in range(size):
        n = int(rng.integers(10, 61))
        values = rng.lognormal(np.log(median_ms), 0.6, n)
        h = LatencyHistogram.from_values(values)
        dense = np.zeros(WINDOW, dtype=np.int64)
        idx = bin_indices(values) + WINDOW // 2
        np.add.at(dense, idx, 1)
        out.append((h.to_bytes(), dense, n, float(h.total)))
    return out
pools = {s: (pool(s * 0.25), pool(s), pool(s / 60.0)) for s in (400, 1500, 6000)}

hourly_cols = ["upload_id", "hour", "workload", "team", "provider", "model", "pool", "operation",
    "batch_api", "requests", "errors", "streaming_requests", "input_tokens", "output_tokens",
    "cached_input_tokens", "logged_requests", "logged_cost_usd", "unlogged_input_tokens",
    "unlogged_cached_input_tokens", "unlogged_output_tokens", "distinct_end_users",
    "ttft_histogram", "latency_histogram", "tpot_histogram", *PRICING_SUM_FIELDS,
    "long_context_threshold_tokens"]
daily_cols = [c for c in hourly_cols if c not in ("hour", "distinct_end_users")] + ["day"]
raw = connection.cursor().cursor
hourly_rows = daily_rows = 0
all_daily = []
with transaction.atomic():
    with raw.copy(f"COPY audit_app_hourlyrollup ({', '.join(hourly_cols)}) FROM STDIN") as copy_h:
      for w, name in enumerate(names):
        provider, model = cards[w % len(cards)]
        team = teams[w % len(teams)]
        scale = (400, 1500, 6000)[w % 3]
        ttft_pool, e2e_pool, tpot_pool = pools[scale]
        logged = w % 2 == 0
        batch = name.endswith("embed") and w % 4 == 0
        daily = []
        for d in range(n_days):
            day = first_day + timedelta(days=d)
            picks = rng.integers(0, len(e2e_pool), size=(24, 3))
            sums = dict(requests=0, errors=0, streaming_requests=0, input_tokens=0,
                        output_tokens=0, cached_input_tokens=0, logged_requests=0,
                        logged_cost_usd=Decimal(0), unlogged_input_tokens=0,
                        unlogged_cached_input_tokens=0, unlogged_output_tokens=0)
            dense = [np.zeros(WINDOW, dtype=np.int64) for _ in range(3)]
            totals = [0.0, 0.0, 0.0]
            for h in range(24):
                parts = [ttft_pool[picks[h, 0]], e2e_pool[picks[h, 1]], tpot_pool[picks[h, 2]]]
                n = parts[1][2]
                inp = n * int(rng.integers(300, 3000))
                out = n * int(rng.integers(50, 600))
                cost = Decimal(0)
                if logged:
                    cost = Decimal(inp) * Decimal("0.0000025") + Decimal(out) * Decimal("0.00001")
                    cost = cost.quantize(Decimal("0.000000001"))
                row = dict(requests=n, errors=n // 50, streaming_requests=n if scale < 6000 else 0,
                           input_tokens=inp, output_tokens=out, cached_input_tokens=inp // 10,
                           logged_requests=n if logged else 0, logged_cost_usd=cost,
                           unlogged_input_tokens=0 if logged else inp,
                           unlogged_cached_input_tokens=0 if logged else inp // 10,
                           unlogged_output_tokens=0 if logged else out)
                for k, v in row.items():
                    sums[k] += v
                hour = datetime(day.year, day.month, day.day, h, tzinfo=UTC)
                copy_h.write_row([upload.pk, hour, name, team, provider, model, "", "completion",
                    batch, row["requests"], row["errors"], row["streaming_requests"],
                    row["input_tokens"], row["output_tokens"], row["cached_input_tokens"],
                    row["logged_requests"], row["logged_cost_usd"], row["unlogged_input_tokens"],
                    row["unlogged_cached_input_tokens"], row["unlogged_output_tokens"], n // 3,
                    parts[0][0], parts[1][0], parts[2][0], *[0] * len(PRICING_SUM_FIELDS),
                    LONG_CONTEXT_THRESHOLD_TOKENS])
                hourly_rows += 1
                for m in range(3):
                    dense[m] += parts[m][1]
                    totals[m] += parts[m][3]
            hists = []
            for m in range(3):
                nz = np.nonzero(dense[m])[0]
                merged = LatencyHistogram()
                merged.bins = dict(zip((nz - WINDOW // 2).tolist(), dense[m][nz].tolist()))
                merged.count = int(dense[m].sum())
                merged.total = totals[m]
                hists.append(merged.to_bytes())
            daily.append([upload.pk, name, team, provider, model, "", "completion", batch,
                *sums.values(), *hists, *[0] * len(PRICING_SUM_FIELDS),
                LONG_CONTEXT_THRESHOLD_TOKENS, day])
        daily_rows += len(daily)
        all_daily.extend(daily)
    with raw.copy(f"COPY audit_app_dailyrollup ({', '.join(daily_cols)}) FROM STDIN") as copy_d:
        for row in all_daily:
            copy_d.write_row(row)
raw.execute("ANALYZE audit_app_hourlyrollup")
raw.execute("ANALYZE audit_app_dailyrollup")
print(json.dumps({"reused": False, "hourly": hourly_rows, "daily": daily_rows,
                  "seconds": time.perf_counter() - t0}))
"""

# The daily rows above are built by the bench itself (summing the hourly ones it wrote); this
# checks them against the application's own derivation on a sample of workload-days.
CHILD_VERIFY = r"""
import json
import django
django.setup()
from audit_app.ingestion.daily import HISTOGRAM_FIELDS, KEY_FIELDS, SUM_FIELDS, daily_from_hourly
from audit_app.ingestion.histograms import LatencyHistogram
from audit_app.models import DailyRollup, HourlyRollup
checked = 0
for daily in DailyRollup.objects.order_by("?")[:5]:
    hourly = HourlyRollup.objects.filter(upload_id=daily.upload_id, workload=daily.workload,
        model=daily.model, hour__date=daily.day).values("hour", *KEY_FIELDS, *SUM_FIELDS,
        *HISTOGRAM_FIELDS)
    [derived] = daily_from_hourly(hourly)
    for f in SUM_FIELDS:
        assert derived[f] == getattr(daily, f), (f, derived[f], getattr(daily, f))
    for f in HISTOGRAM_FIELDS:
        stored = LatencyHistogram.from_bytes(getattr(daily, f))
        assert LatencyHistogram.from_bytes(derived[f]) == stored, f
    checked += 1
print(json.dumps({"checked": checked}))
"""

CHILD_TIME = r"""
import json, os, statistics, sys, time
import django
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
from django.test.utils import setup_test_environment
from audit_app.models import DailyRollup, Workload
from audit_app.access.tokens import api_token_issue
from audit_app.reporting.selectors import data_date_range
from audit_app.lib.results_cache import data_changed
import config.wsgi  # noqa: F401  (the WSGI application, as gunicorn loads it)

requests_per, cold_per = int(sys.argv[1]), int(sys.argv[2])
User = get_user_model()
admin, _ = User.objects.get_or_create(username="scale-admin", defaults={"is_staff": True})
admin.is_superuser = True
admin.save()
client = Client(HTTP_HOST="127.0.0.1")
client.force_login(admin)
key = api_token_issue(user=admin, name="scale bench").key
api = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Token {key}")
first, last = data_date_range()
year = f"start={first}&end={last}"
top = DailyRollup.objects.values_list("workload", flat=True).order_by("-requests")[0]
busiest = Workload.objects.get(name=top)
endpoints = [
    ("overview", client, "/"),
    ("workloads list", client, "/workloads/"),
    ("workload detail", client, f"/workloads/{busiest.pk}/"),
    ("spend API", api, "/api/v1/spend/?group_by=workload"),
    ("workloads API", api, "/api/v1/workloads/"),
    ("workload detail API", api, f"/api/v1/workloads/{busiest.pk}/"),
]
results = []
for window, suffix in (("30 days", ""), ("365 days", year)):
    for name, who, url in endpoints:
        full = url + (("&" if "?" in url else "?") + suffix if suffix else "")
        for _ in range(3):
            r = who.get(full, secure=True)
            assert r.status_code == 200, (full, r.status_code, r.content[:300])
        times = []
        for _ in range(requests_per):
            t0 = time.perf_counter()
            r = who.get(full, secure=True)
            times.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200, (full, r.status_code)
        times.sort()
        p95 = times[min(len(times) - 1, int(round(0.95 * len(times))) - 1)]
        cold = []
        for _ in range(cold_per if window == "30 days" else 1):
            data_changed()  # a new data version: nothing cached, as right after an ingest
            t0 = time.perf_counter()
            r = who.get(full, secure=True)
            cold.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200, (full, r.status_code)
        results.append({"window": window, "endpoint": name, "url": full,
                        "p50": statistics.median(times), "p95": p95, "max": times[-1],
                        "cold": statistics.median(cold), "cold_n": len(cold)})
print(json.dumps(results))
"""


# The first visitor of each year-long page after a data change: with the worker's refresh and
# warm-up run in between, and (the yardstick) without.
CHILD_FIRST_VISIT = r"""
import json, time
import django
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
from audit_app.access.tokens import api_token_issue
from audit_app.lib.results_cache import data_changed
from audit_app.derived import derived_refresh
from audit_app.reporting.selectors import data_date_range
import config.wsgi  # noqa: F401

admin, _ = get_user_model().objects.get_or_create(
    username="scale-admin", defaults={"is_staff": True, "is_superuser": True})
client = Client(HTTP_HOST="127.0.0.1")
client.force_login(admin)
api = Client(HTTP_HOST="127.0.0.1",
             HTTP_AUTHORIZATION=f"Token {api_token_issue(user=admin, name='scale first').key}")
first, last = data_date_range()
year = f"start={first}&end={last}"
endpoints = [
    ("workloads list", client, f"/workloads/?{year}"),
    ("overview", client, f"/?{year}"),
    ("workloads API", api, f"/api/v1/workloads/?{year}"),
    ("spend API", api, f"/api/v1/spend/?group_by=workload&{year}"),
]


def first_visits():
    # (wall ms, this thread's CPU ms): on a machine other jobs share, CPU time is the steadier
    out = {}
    for name, who, url in endpoints:
        t0, c0 = time.perf_counter(), time.thread_time()
        r = who.get(url, secure=True)
        out[name] = ((time.perf_counter() - t0) * 1000, (time.thread_time() - c0) * 1000)
        assert r.status_code == 200, (url, r.status_code)
    return out


data_changed()  # as an ingest does: nothing cached for the new version
cold = first_visits()
data_changed()
t0 = time.perf_counter()
refreshed = derived_refresh()  # what the worker's refresh task runs, warm-up included
refresh_s = time.perf_counter() - t0
warm = first_visits()
print(json.dumps({"days": (last - first).days + 1, "refreshed": refreshed,
                  "refresh_s": refresh_s, "cold": cold, "warm": warm,
                  "urls": {name: url for name, _, url in endpoints}}))
"""


def first_visit_lines(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The first-visit figures as printed lines and as table rows (endpoint, request, wall and
    CPU ms after the warm-up, wall and CPU ms without it, verdict on the warmed wall time)."""
    lines = [
        f"first visitor of a year ({result['days']} days) after a data change; the worker's "
        f"refresh and warm-up took {result['refresh_s']:.1f} s "
        f"(target <= {FIRST_VISIT_TARGET_MS:.0f} ms; yardstick: no warm-up):",
        f"  {'endpoint':<16} {'warmed ms':>10} {'(cpu)':>7} {'no warm-up ms':>14} {'(cpu)':>7}",
    ]
    rows = []
    for name, (warm_ms, warm_cpu) in result["warm"].items():
        verdict = "MET" if warm_ms <= FIRST_VISIT_TARGET_MS else "NOT met"
        cold_ms, cold_cpu = result["cold"][name]
        lines.append(
            f"  {name:<16} {warm_ms:>10.0f} {warm_cpu:>7.0f} {cold_ms:>14.0f} {cold_cpu:>7.0f}"
            f"  {verdict}"
        )
        rows.append(
            [
                name,
                f"`{result['urls'][name]}`",
                f"{warm_ms:.0f} ({warm_cpu:.0f})",
                f"{cold_ms:.0f} ({cold_cpu:.0f})",
                verdict,
            ]
        )
    return lines, rows


def _database_url() -> str:
    configured = os.environ.get("BENCH_SCALE_DATABASE_URL")
    if configured:
        return configured
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = 'audit_scale'")
        exists = found.fetchone() is not None
        if exists and not _current(PG_SCALE_URL):
            # Filled by an older bench: the fill would delete it all anyway, so drop it rather
            # than have `migrate` convert 1.7M rows first.
            conn.execute("DROP DATABASE audit_scale WITH (FORCE)")
            exists = False
        if not exists:
            conn.execute("CREATE DATABASE audit_scale")
    return PG_SCALE_URL


def _current(url: str) -> bool:
    """The database holds this GENERATION's data (an empty or new one counts as current)."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
        try:
            uploads = conn.execute("SELECT sha256 FROM audit_app_upload").fetchall()
        except psycopg.errors.UndefinedTable:
            return True
    return not uploads or (GENERATION,) in uploads


def _env(database_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": "bench-only-" + "x" * 50,
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DATABASE_URL": database_url,
            "DJANGO_VAR_DIR": str(BENCH_DIR / "scale"),
            "DJANGO_LOG_LEVEL": "WARNING",
            "PYTHONPATH": str(REPO),
        }
    )
    return env


def run() -> list[str]:
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    env = _env(_database_url())
    for command in ("migrate", "collectstatic"):
        subprocess.run(
            [sys.executable, "manage.py", command, "--noinput", "-v0"],
            cwd=REPO,
            env=env,
            check=True,
            timeout=1800,
        )
    started = time.perf_counter()
    fill = run_child(CHILD_FILL, GENERATION, str(WORKLOADS), str(DAYS), env=env, timeout=3600)
    assert isinstance(fill, dict)
    verify = run_child(CHILD_VERIFY, env=env, timeout=3600)
    requests_per = int(os.environ.get("BENCH_SCALE_REQUESTS", "50"))
    cold_per = int(os.environ.get("BENCH_SCALE_COLD_REQUESTS", "5"))
    results = run_child(CHILD_TIME, str(requests_per), str(cold_per), env=env, timeout=3600)
    assert isinstance(results, list)
    first_visit = run_child(CHILD_FIRST_VISIT, env=env, timeout=3600)
    visit_lines, visit_rows = first_visit_lines(first_visit)
    how = "reused" if fill["reused"] else f"filled in {time.perf_counter() - started:.0f} s"
    lines = [
        f"scale (PostgreSQL, {WORKLOADS} workloads x {DAYS} days: {fill['hourly']:,} hourly "
        f"and {fill['daily']:,} daily rollups, {how}; daily rows match the app's derivation on "
        f"{verify['checked']} sampled workload-days); {requests_per} requests each after 3 "
        "warm-up, server time in ms:",
        f"  {'window':<9} {'endpoint':<20} {'p50':>7} {'p95':>7} {'max':>7} {'cold':>8}  "
        f"target p95 <= {TARGET_MS:.0f}",
    ]
    table = []
    for r in results:
        verdict = "met" if r["p95"] <= TARGET_MS else "MISSED"
        lines.append(
            f"  {r['window']:<9} {r['endpoint']:<20} {r['p50']:>7.1f} {r['p95']:>7.1f} "
            f"{r['max']:>7.1f} {r['cold']:>8.0f}  {verdict}"
        )
        table.append(
            [
                r["window"],
                r["endpoint"],
                f"`{r['url']}`",
                f"{r['p50']:.1f}",
                f"{r['p95']:.1f}",
                f"{r['max']:.1f}",
                f"{r['cold']:.0f}",
                verdict,
            ]
        )
    body = "\n".join(
        [
            "## Scale",
            "",
            "Written by `make bench` (`bench/scale.py`). PostgreSQL on this machine (2 cores), "
            f"{WORKLOADS} workloads with a year of data: {fill['hourly']:,} hourly rollups "
            f"(three latency histograms each) and the {fill['daily']:,} daily rollups derived "
            f"from them. Each endpoint: 3 warm-up requests, then {requests_per} timed, in-process "
            "through Django's test client with DEBUG off (server time, no network). The default "
            "window is the 30 days ending on the last data day; the 365-day rows pass "
            "`start`/`end` for the whole year. Target: p95 <= 250 ms.",
            "",
            "Pages compute spend and percentiles from the daily rollups and keep the results "
            "until the data changes (`audit_app/lib/results_cache.py`: a new data version whenever "
            "an upload lands or is deleted, or a price card or serving pool changes), and the "
            "worker computes the default views right after each ingest. The p50/p95/max columns "
            "are those cached reads. *cold* is the median of requests made right after a new "
            f"data version (nothing cached: {cold_per} per endpoint for 30 days, 1 for the "
            "year), what the first visitor of a non-default filter waits; the workloads list "
            "is the slowest because it merges every workload's daily latency histograms.",
            "",
            markdown_table(
                [
                    "window",
                    "endpoint",
                    "request",
                    "p50 ms",
                    "p95 ms",
                    "max ms",
                    "cold ms",
                    "p95 target",
                ],
                table,
            ),
            "",
            "First visitor of a year after a data change (target <= 1 s): a new data version as "
            "an ingest makes, then the worker's derived refresh (re-classify, re-price, then "
            "warm the default window and the quick windows of the last 7, 30, 90 and 365 days "
            f"with data; {first_visit['refresh_s']:.1f} s here), then one request each: wall "
            "ms, and in brackets the request's CPU ms. The yardstick is the same first request "
            "with no warm-up in between.",
            "",
            markdown_table(
                [
                    "endpoint",
                    "request",
                    "warmed ms (cpu)",
                    "no warm-up ms (cpu)",
                    "target <= 1 s",
                ],
                visit_rows,
            ),
            "",
        ]
    )
    write_section("scale", body)
    return [*lines, *visit_lines]


if __name__ == "__main__":
    for line in run():
        print(line)
