"""A month's statements as an Excel workbook (openpyxl): a summary sheet, one row per team and a
total row, then one sheet per team (its direct and allocated cost, each allocation and why, its
workloads and models). Money cells are numbers with a currency format, never text."""

from __future__ import annotations

import io
import re
from decimal import Decimal
from typing import Any

from openpyxl import Workbook
from openpyxl.worksheet.worksheet import Worksheet

from audit_app.lib.csv_export import FORMULA_PREFIXES
from audit_app.statements.rows import CSV_HEADER, csv_rows
from audit_app.statements.services import MonthStatement, TeamStatement

CURRENCY = '"$"#,##0.00'
UNIT_CURRENCY = '"$"#,##0.0000'
SUMMARY = "Summary"
_MONEY_COLUMNS = {name for name in CSV_HEADER if name.endswith("_usd")}
_UNIT_COLUMNS = {name for name in CSV_HEADER if name.startswith("usd_per")}
_SHEET_NAME = re.compile(r"[\[\]:*?/\\]")


def _cell(value: object) -> object:
    """Decimals as numbers (cents convert to the same float cents); text that Excel would read
    as a formula keeps a leading apostrophe, as in the CSV."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def sheet_title(team: str, taken: set[str]) -> str:
    """An Excel sheet name for ``team``: no []:*?/\\, at most 31 characters, unique."""
    base = _SHEET_NAME.sub("-", team)[:31] or "team"
    title, n = base, 2
    while title.lower() in taken or title == SUMMARY:
        title = f"{base[: 31 - len(str(n)) - 1]}~{n}"
        n += 1
    taken.add(title.lower())
    return title


def _row(sheet: Worksheet, values: list[Any], formats: list[str | None] | None = None) -> None:
    sheet.append([_cell(v) for v in values])
    if formats:
        for cell, number_format in zip(sheet[sheet.max_row], formats, strict=False):
            if number_format:
                cell.number_format = number_format


def _summary(sheet: Worksheet, statement: MonthStatement, rows: list[list[object]]) -> None:
    _row(sheet, [f"Statements for {statement.label}"])
    _row(sheet, ["Policy", str(statement.policy.default.method)])
    _row(sheet, [])
    _row(sheet, list(CSV_HEADER))
    formats = [
        CURRENCY if n in _MONEY_COLUMNS else UNIT_CURRENCY if n in _UNIT_COLUMNS else None
        for n in CSV_HEADER
    ]
    for row in rows:
        _row(sheet, row, formats)
    total: list[object] = [f"{statement.month:%Y-%m}", "total"]
    total.extend("" for _ in CSV_HEADER[2:])
    for name in ("direct_usd", "allocated_usd", "total_usd"):
        i = CSV_HEADER.index(name)
        total[i] = sum((Decimal(str(r[i])) for r in rows), Decimal(0))
    _row(sheet, total, formats)


def _team_sheet(sheet: Worksheet, statement: MonthStatement, team: TeamStatement) -> None:
    bill = team.bill
    money = [None, CURRENCY]
    _row(sheet, [f"{bill.team}: {statement.label}"])
    for label, value in (
        ("Direct API spend", bill.direct_api_usd),
        ("Direct GPU share", bill.direct_gpu_usd),
        ("Allocated shared cost", bill.allocated_usd),
        ("Total", bill.total_usd),
        ("Previous month", team.previous_total_usd),
    ):
        _row(sheet, [label, value], money)
    _row(sheet, [])
    _row(sheet, ["Allocation", "Amount", "Why"])
    for share in bill.shares:
        _row(sheet, [share.label, share.amount_usd, share.why], money)
    for title, parts in (("Workload", bill.workloads), ("Model", bill.models)):
        _row(sheet, [])
        _row(sheet, [title, "Direct spend", "Requests", "Input tokens", "Output tokens"])
        for part in parts:
            _row(
                sheet,
                [part.key, part.spend_usd, part.requests, part.input_tokens, part.output_tokens],
                money,
            )


def statement_workbook(
    statement: MonthStatement,
    teams: tuple[TeamStatement, ...],
    directory: dict[str, Any],
) -> bytes:
    """The .xlsx file's bytes for ``teams`` of ``statement``."""
    book = Workbook()
    summary = book.active
    assert summary is not None
    summary.title = SUMMARY
    _summary(summary, statement, csv_rows(statement, teams, directory))
    taken: set[str] = {SUMMARY.lower()}
    for team in teams:
        _team_sheet(book.create_sheet(sheet_title(team.team, taken)), statement, team)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()
