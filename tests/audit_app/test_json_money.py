"""Money in JSON is a decimal string, never a float: every `--json` command is listed below
by the money it gives, and each surface giving recorded amounts is run on a bill line of
8.5450077867419368 (16 decimals, as Azure writes them) and a logged cost of 0.123456789.

A recorded amount is the Decimal the database holds, whole: PostgreSQL keeps the line as
written; SQLite keeps 15 significant digits of any number (it stores decimals as floating
point), so there the line is 8.54500778674194. Figures worked out from the records (spend,
budgets, statements, plans) have six decimals and are checked in `test_money_agreement.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from audit_app.models import Upload
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db

LINE = "8.5450077867419368"
FLOAT_REPR = repr(float(LINE))  # 8.545007786741937: what a float would print
LOGGED = "0.123456789"

# Every management command, by the money its --json gives.
RECORDED = {  # amounts as billed or logged, whole: run below
    "command:ingest": "an upload's billed / effective totals",
    "command:bills": "billed / effective cost per currency and period",
    "command:land_live": "logged cost landed per stream (test_landing_pages)",
}
WORKED_OUT = {  # six decimals (the read model's spend and the figures built on it)
    "command:workloads": "spend_usd, api_spend_usd, gpu_cost_usd",
    "command:budgets": "actual, forecast and previous spend",
    "command:anomalies": "spend, expected and its causes",
    "command:statement": "each team's direct, allocated and total",
    "command:plan": "the savings plan",
    "command:recommend": "monthly figures, stored to the cent",
    "command:alerts": "budget and anomaly figures as of their alert",
    "command:gate": "cost per 1M output tokens: the Decimal quotient as text",
}
NO_MONEY_JSON = {
    "command:benchmark_import": "measured metrics: numbers to 3 decimals",
    "command:prices_sync": "price cards added: unit prices as the catalog writes them",
    "command:sources": "billing sources and their polls",
}
NO_JSON = {
    "command:classify",
    "command:encrypt_secrets",
    "command:issue_token",
    "command:seed_demo",
    "command:serve",
}


def test_every_json_command_is_listed() -> None:
    root = Path(__file__).resolve().parents[2]
    commands = {
        f"command:{path.stem}": path.read_text()
        for app in ("audit_app", "benchmarks_app")
        for path in (root / app / "management" / "commands").glob("*.py")
        if path.stem != "__init__"
    }
    takes_json = {name for name, source in commands.items() if '"--json"' in source}
    listed = set(RECORDED) | set(WORKED_OUT) | set(NO_MONEY_JSON)
    assert sorted(takes_json ^ listed) == []
    assert sorted(set(commands) - listed ^ NO_JSON) == []


def _stored_line() -> str:
    """The bill line as this database keeps it (see the module docstring)."""
    return LINE if connection.vendor == "postgresql" else "8.54500778674194"


def _bill_csv() -> bytes:
    """The first line of the FOCUS 1.3 fixture, its billed and effective cost set to LINE."""
    header, first = (
        (FIXTURES_DIR / "billing" / "focus-1.3_providers.csv").read_text().split("\n")[:2]
    )
    cells = first.split(",")
    columns = header.split(",")
    for name in ("BilledCost", "EffectiveCost"):
        cells[columns.index(name)] = LINE
    return f"{header}\n{','.join(cells)}\n".encode()


@pytest.fixture
def landed(tmp_path: Path, capsys: Any) -> dict[str, Any]:
    bill = tmp_path / "bill.csv"
    bill.write_bytes(_bill_csv())
    call_command("ingest", str(bill), "--kind", "billing", "--json")
    ingest_text = capsys.readouterr().out
    log = tmp_path / "log.csv"
    log.write_text(
        "started_at,ended_at,workload,team,provider,model,input_tokens,output_tokens,cost_usd\n"
        f"2026-11-02T10:00:00Z,2026-11-02T10:00:01Z,chat,web,openai,gpt-4o,10,10,{LOGGED}\n"
    )
    call_command("ingest", str(log), "--json")
    capsys.readouterr()
    return {
        "ingest": ingest_text,
        "bill": Upload.objects.get(kind=Upload.Kind.BILLING),
        "log": Upload.objects.get(kind=Upload.Kind.TOKEN_LOG),
    }


def _command(name: str) -> Callable[[Any, Client], str]:
    def run(capsys: Any, client: Client) -> str:
        call_command(name, "--json")
        return str(capsys.readouterr().out)

    return run


def _api(path: str) -> Callable[[Any, Client], str]:
    def get(capsys: Any, client: Client) -> str:
        response = client.get(path)
        assert response.status_code == 200, response.content
        return response.content.decode()

    return get


# (surface, its JSON, the paths of the amounts in it, which amount)
ROWS: list[tuple[str, str, list[tuple[Any, ...]], str]] = [
    ("command:ingest", "ingest", [("billed_cost", "USD"), ("effective_cost", "USD")], "line"),
    (
        "command:bills",
        "bills",
        [("billed_cost", "USD"), ("effective_cost", "USD"), ("periods", 0, "billed_cost", "USD")],
        "line",
    ),
    (
        "api-bills",
        "/api/v1/bills/",
        [("billed_cost", "USD"), ("effective_cost", "USD"), ("results", 0, "billed_cost", "USD")],
        "line",
    ),
    (
        "api-upload-detail",
        "/api/v1/uploads/{bill}/",
        [
            ("billing", "billed_cost", "USD"),
            ("billing", "effective_cost", "USD"),
            ("billing", "periods", 0, "effective_cost", "USD"),
        ],
        "line",
    ),
    ("api-upload-detail", "/api/v1/uploads/{log}/", [("logged_cost_usd",)], "logged"),
    ("api-uploads", "/api/v1/uploads/", [("results", "{log}", "logged_cost_usd")], "logged"),
]


def _at(body: Any, path: tuple[Any, ...], ids: dict[str, int]) -> Any:
    for step in path:
        if step == "{log}":
            body = next(row for row in body if row["id"] == ids["log"])
        else:
            body = body[step]
    return body


@pytest.mark.parametrize(("surface", "source", "paths", "which"), ROWS)
def test_recorded_money_is_the_stored_decimal_as_text(
    landed: dict[str, Any],
    capsys: Any,
    finops_user: Any,
    surface: str,
    source: str,
    paths: list[tuple[Any, ...]],
    which: str,
) -> None:
    assert surface in RECORDED or surface.startswith("api-")
    ids = {"bill": landed["bill"].pk, "log": landed["log"].pk}
    client = Client()
    client.force_login(finops_user)
    if source == "ingest":
        text = landed["ingest"]
    elif source.startswith("/"):
        text = _api(source.format(**ids))(capsys, client)
    else:
        text = _command(source)(capsys, client)
    body = json.loads(text)
    expected = _stored_line() if which == "line" else LOGGED
    for path in paths:
        assert _at(body, path, ids) == expected, path
    assert FLOAT_REPR not in text


def test_a_line_read_back_keeps_every_digit_the_database_keeps(landed: dict[str, Any]) -> None:
    charge = landed["bill"].charges.get()
    assert str(charge.billed_cost.normalize()) == _stored_line()
