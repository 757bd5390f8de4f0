"""`make probe`'s second phase: the hostile requests of issue 13, over HTTP to gunicorn.

One request per case, each with the status it must get; the probe fails when any answer is 5xx
or not the expected one. The static cases are `PARAMETER_CASES` and `ACCESS_CASES`; the ones that
need ids (gates, deletions) or a check of the body are built while the probe runs (`run_hostile`).
"""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCHMARK_FIXTURES = REPO / "tests" / "fixtures" / "benchmarks"
REQUEST_TIMEOUT_S = 150
MESSAGE_CHARS = 80
PATH_CHARS = 60
BAD_ATTEMPTS = 30
GATED_TARGET = "p5.48xlarge (NVIDIA H100 80GB)"
EVIL_WORKLOAD = '<a href="https://evil.example/phish">CLICK-ME</a>'
RAW_LINK = '<a href="https://evil.example'
ESCAPED_LINK = "&lt;a href="


@dataclass(frozen=True, kw_only=True)
class Case:
    """One request: the issue's item, what it tries, and the statuses that are right."""

    item: int
    what: str
    method: str
    path: str
    role: str
    expected: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class Answer:
    """What the server said to a case; ``problem`` is a failed check of the body ("" if none)."""

    case: Case
    status: int
    message: str
    problem: str = ""

    @property
    def passed(self) -> bool:
        return self.status < 500 and self.status in self.case.expected and not self.problem


def _param_case(path: str, role: str, what: str) -> Case:
    return Case(item=6, what=what, method="GET", path=path, role=role, expected=(400,))


# Item 6: every parameter once on a page, the CSV and an API; roles are the probe's clients.
PARAMETER_CASES: tuple[Case, ...] = (
    _param_case("/?end=0001-01-01", "finops", "date before any data"),
    _param_case("/?end=9999-12-31", "finops", "date at the end of time"),
    _param_case("/spend.csv?end=0001-01-01", "finops", "date before any data"),
    _param_case("/spend.csv?end=9999-12-31", "finops", "date at the end of time"),
    _param_case("/api/v1/spend/?end=0001-01-01", "finops-api", "date before any data"),
    _param_case("/api/v1/spend/?end=9999-12-31", "finops-api", "date at the end of time"),
    _param_case("/workloads/?team=%00", "finops", "NUL byte"),
    _param_case("/api/v1/spend/?team=%00", "finops-api", "NUL byte"),
    _param_case("/?provider=%00", "finops", "NUL byte"),
    _param_case("/api/v1/spend/?provider=%00", "finops-api", "NUL byte"),
    _param_case("/spend.csv?model=%00", "finops", "NUL byte"),
    _param_case("/api/v1/workloads/?model=%00", "finops-api", "NUL byte"),
    _param_case("/audit/?action=%00", "admin", "NUL byte"),
    _param_case("/api/v1/audit-events/?action=%00", "admin-api", "NUL byte"),
    _param_case("/reconciliation/?threshold=1e308", "finops", "huge threshold"),
    _param_case("/api/v1/reconciliation/?threshold=1e308", "finops-api", "huge threshold"),
)

# Item 8: the API's schema and docs are for people with a role, like every other page.
ACCESS_CASES: tuple[Case, ...] = tuple(
    Case(item=8, what=what, method="GET", path=path, role=role, expected=expected)
    for path in ("/api/schema/", "/api/docs/")
    for role, what, expected in (
        ("no-role", "signed in, no role", (403,)),
        ("anonymous", "not signed in", (401, 302)),
    )
)


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _json_message(body: Any) -> str:
    if isinstance(body, Mapping):
        if body.get("detail"):
            return str(body["detail"])
        for field, errors in body.items():
            first = errors[0] if isinstance(errors, list) and errors else errors
            return f"{field}: {first}"
    if isinstance(body, list) and body:
        return str(body[0])
    return ""


def error_message(content_type: str, text: str) -> str:
    """The first MESSAGE_CHARS characters of what an error answer says: a JSON body's
    ``detail`` (else its first field error), a page's alert (else its title), or plain text."""
    if "json" in content_type:
        try:
            message = _json_message(json.loads(text))
        except ValueError:
            message = text
    elif "html" in content_type:
        found = re.search(r'role="alert"[^>]*>(.*?)</', text, re.S) or re.search(
            r"<title>(.*?)</title>", text, re.S
        )
        message = html.unescape(re.sub(r"<[^>]+>", "", found.group(1))) if found else ""
    else:
        message = text
    return shorten(message, MESSAGE_CHARS)


def chart_label_problem(page: str) -> str:
    """Why the page's embedded chart data does not show EVIL_WORKLOAD safely ("" when it does):
    the figures (``json_script`` blocks) must hold the escaped label and never the raw link."""
    blocks = re.findall(r'<script id="[^"]*" type="application/json">(.*?)</script>', page, re.S)
    figures = "\n".join(json.dumps(json.loads(block)) for block in blocks)
    if not blocks:
        return "no chart data in the page"
    if RAW_LINK.replace('"', '\\"') in figures:
        return "the raw link is in the chart data"
    if ESCAPED_LINK not in figures:
        return "the escaped label is not in the chart data"
    return ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def hostile_markdown(answers: list[Answer]) -> str:
    """The "Hostile requests" table of the probe section."""
    from bench.report import markdown_table

    rows = [
        [
            str(a.case.item),
            _cell(a.case.what),
            a.case.method,
            f"`{_cell(shorten(a.case.path, PATH_CHARS))}`",
            a.case.role,
            " or ".join(str(s) for s in a.case.expected),
            str(a.status) if a.status else "no answer",
            _cell(a.problem or a.message),
            "PASS" if a.passed else "FAIL",
        ]
        for a in answers
    ]
    failed = sum(not a.passed for a in answers)
    return "\n".join(
        [
            "### Hostile requests",
            "",
            "The requests of issue 13, sent over HTTP to the same gunicorn after the deletions "
            "(item numbers are the issue's). A case passes when its status is the expected one "
            "(never 5xx) and, where the case checks the body, the check holds; the message is "
            f"the first {MESSAGE_CHARS} characters of what the answer says. "
            f"{len(answers) - failed} of {len(answers)} passed.",
            "",
            markdown_table(
                [
                    "item",
                    "case",
                    "method",
                    "path",
                    "role",
                    "expected",
                    "observed",
                    "message",
                    "result",
                ],
                rows,
            ),
        ]
    )


# --- Running it (needs the probe's servers) ----------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Probe:
    """What the phase needs: the server, a requests session per role (signed in or carrying a
    token), the password every probe account has, and SQL on the probe's database."""

    base: str
    clients: Mapping[str, Any]
    password: str
    sql: Callable[[str], object]
    wait_refreshed: Callable[[], None]


class Recorder:
    def __init__(self, probe: Probe) -> None:
        self.probe = probe
        self.answers: list[Answer] = []

    def send(
        self,
        case: Case,
        *,
        check: Callable[[Any], str] | None = None,
        describe: Callable[[Any], str] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Send ``case`` as its role, record the answer, return the response (None if none).
        ``check`` finds what is wrong with an answer of the expected status; ``describe`` says
        what a successful one did (an error's message is read from its body)."""
        import requests

        client = self.probe.clients[case.role]
        kwargs.setdefault("allow_redirects", False)
        try:
            response = client.request(
                case.method, f"{self.probe.base}{case.path}", timeout=REQUEST_TIMEOUT_S, **kwargs
            )
        except requests.RequestException as exc:
            self.answers.append(Answer(case=case, status=0, message=shorten(str(exc), 80)))
            return None
        if response.status_code >= 300:
            message = error_message(response.headers.get("Content-Type", ""), response.text)
        else:
            message = shorten(describe(response), MESSAGE_CHARS) if describe else ""
        problem = check(response) if check and response.status_code in case.expected else ""
        self.answers.append(
            Answer(case=case, status=response.status_code, message=message, problem=problem)
        )
        print(f"probe: {case.method} {case.path[:60]} -> {response.status_code}", flush=True)
        return response

    def note(self, case: Case, problem: str) -> None:
        """A case that could not be sent (what it needed is missing): recorded as failed."""
        self.answers.append(Answer(case=case, status=0, message="", problem=problem))


def _csv(name: str, rows: int, *, day: str, cost: str) -> bytes:
    lines = ["started_at,ended_at,workload,team,provider,model,input_tokens,output_tokens,cost_usd"]
    lines += [
        f'{day}T10:{i:02d}:00Z,{day}T10:{i:02d}:01Z,"{name.replace(chr(34), chr(34) * 2)}",'
        f"team-0,openai,gpt-4o,{100 + i},25,{cost}"
        for i in range(rows)
    ]
    return ("\n".join(lines) + "\n").encode()


def _wait_landed(probe: Probe, upload_id: int) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        status = probe.sql(f"SELECT status FROM audit_app_upload WHERE id = {int(upload_id)}")
        if status in ("succeeded", "failed"):
            probe.wait_refreshed()
            return
        time.sleep(0.5)
    raise RuntimeError(f"upload {upload_id} did not land in 600 s")


def _gate_cases(rec: Recorder) -> None:
    """Item 1 (gate -> recommendation) and item 5 (deleting a gated benchmark upload)."""
    probe = rec.probe
    runs: dict[str, int] = {}
    for side in ("baseline", "candidate"):
        fixture = BENCHMARK_FIXTURES / f"vllm_{side}.json"
        case = Case(
            item=1,
            what=f"upload the {side} benchmark fixture",
            method="POST",
            path="/api/v1/benchmark-runs/",
            role="engineer-api",
            expected=(201,),
        )
        response = rec.send(
            case,
            files={"file": (fixture.name, fixture.read_bytes(), "application/json")},
            data={"gpu_utilization_pct": "80"},
            describe=lambda r: f"run {r.json()['id']}, model {r.json()['model']}",
        )
        if response is not None and response.status_code == 201:
            runs[side] = response.json()["id"]
    # The demo recommends batch APIs and cheaper providers only, which no gate may verify
    # whatever its runs; made a dedicated-hardware one, the approved case is refused for the
    # runs' model alone (the fixtures measure a Llama model, the demo's workloads call others).
    recommendation = probe.sql(
        f"UPDATE audit_app_recommendation SET target_kind = 'dedicated_hardware', "
        f"target = '{GATED_TARGET}' WHERE id = (SELECT min(id) FROM audit_app_recommendation) "
        "RETURNING id"
    )
    gates: list[int] = []
    for status, expected, what in (
        ("proposed", 409, "gate links a proposed recommendation"),
        ("rejected", 409, "gate links a rejected recommendation"),
        ("pilot_approved", 400, "gate links an approved recommendation, runs of another model"),
    ):
        case = Case(
            item=1,
            what=what,
            method="POST",
            path="/api/v1/gates/",
            role="engineer-api",
            expected=(expected,),
        )
        if recommendation is None or len(runs) < 2:
            rec.note(case, "no recommendation or no runs to gate")
            continue
        probe.sql(
            f"UPDATE audit_app_recommendation SET status = '{status}' "
            f"WHERE id = {int(recommendation)} RETURNING id"  # type: ignore[call-overload]
        )

        def unchanged(response: Any, status: str = status) -> str:
            now = probe.sql(
                f"SELECT status FROM audit_app_recommendation WHERE id = {int(recommendation)}"  # type: ignore[call-overload]
            )
            body = response.json()
            gates.append(int(body["gate"]))
            if now != status:
                return f"the recommendation moved from {status} to {now}"
            fields = [m["field"] for m in body["mismatches"]]
            if status == "pilot_approved" and "candidate.model" not in fields:
                return f"refused for {fields}, not for the runs' model"
            return ""

        rec.send(
            case,
            json={
                "baseline": runs["baseline"],
                "candidate": runs["candidate"],
                "recommendation": recommendation,
            },
            check=unchanged,
        )
    case = Case(
        item=5,
        what="delete the benchmark upload a gate compares",
        method="DELETE",
        path="/api/v1/uploads/{id}/",
        role="engineer-api",
        expected=(409,),
    )
    if not gates:
        rec.note(case, "no gate was recorded")
        return
    upload = probe.sql(
        f"SELECT upload_id FROM benchmarks_app_benchmarkrun WHERE id = {int(runs['baseline'])}"
    )
    case = replace(case, path=f"/api/v1/uploads/{upload}/")

    def names_the_gate(response: Any) -> str:
        body = response.json()
        detail = str(body.get("detail", ""))
        named = gates[0] in body.get("gates", []) and re.search(rf"\b{gates[0]}\b", detail)
        return "" if named else f"gate {gates[0]} not named: {shorten(str(body), 120)}"

    rec.send(case, check=names_the_gate)


def _upload_case(
    rec: Recorder, case: Case, name: str, data: bytes, check: Callable[[Any], str]
) -> Any:
    return rec.send(
        case,
        files={"file": (name, data, "text/csv")},
        data={"kind": "token_log"},
        check=check,
        describe=_stored_name,
    )


def _stored_name(response: Any) -> str:
    stored = response.json()["original_name"]
    shown = stored if len(stored) <= 24 else f"{stored[:12]}…{stored[-8:]}"
    return f"stored as {shown} ({len(stored.encode())} bytes)"


def _file_cases(rec: Recorder, last_day: str) -> int | None:
    """Items 4 (long filenames), 7 (a link in a workload's name) and 8 (deleting another
    user's upload). The id of the link's upload, or None."""
    for size in (255, 300):
        name = "n" * (size - len(".csv")) + ".csv"

        def kept(response: Any, name: str = name) -> str:
            """Kept whole up to 255 bytes, else shortened to 255 keeping the extension."""
            stored = response.json()["original_name"]
            if len(name) <= 255:
                right = stored == name
            else:
                right = len(stored.encode()) <= 255 and stored.endswith(".csv")
            return "" if right else f"wrong name: {_stored_name(response)}"

        case = Case(
            item=4,
            what=f"token log named with {size} bytes",
            method="POST",
            path="/api/v1/uploads/",
            role="finops-api",
            expected=(202,),
        )
        _upload_case(rec, case, name, _csv(f"long-name-{size}", 3, day=last_day, cost="0.01"), kept)
    case = Case(
        item=7,
        what="token log naming a workload with a link",
        method="POST",
        path="/api/v1/uploads/",
        role="finops-api",
        expected=(202,),
    )
    response = _upload_case(
        rec,
        case,
        "evil.csv",
        _csv(EVIL_WORKLOAD, 5, day=last_day, cost="100000"),
        lambda r: "",
    )
    if response is None or response.status_code != 202:
        return None
    evil = int(response.json()["id"])
    _wait_landed(rec.probe, evil)
    case = Case(
        item=7,
        what="overview chart escapes the workload's name",
        method="GET",
        path="/",
        role="finops",
        expected=(200,),
    )
    rec.send(
        case,
        check=lambda r: chart_label_problem(r.text),
        describe=lambda r: "the chart data holds the escaped label, not the link",
    )
    case = Case(
        item=8,
        what="engineer deletes a finops user's upload",
        method="DELETE",
        path=f"/api/v1/uploads/{evil}/",
        role="engineer-api",
        expected=(403,),
    )
    rec.send(case)
    return evil


def _lockout_cases(rec: Recorder) -> None:
    """Item 3: someone else's failures never refuse correct credentials."""
    import requests

    base = rec.probe.base
    bad = Case(
        item=3,
        what=f"{BAD_ATTEMPTS} bad tokens from one address (the last)",
        method="GET",
        path="/api/v1/me/",
        role="bad-token",
        expected=(429,),
    )
    for attempt in range(BAD_ATTEMPTS - 1):
        requests.get(
            f"{base}/api/v1/me/",
            headers={"Authorization": f"Token bad{attempt:04d}{'x' * 36}"},
            timeout=REQUEST_TIMEOUT_S,
        )
    rec.send(bad)
    good = Case(
        item=3,
        what="then a valid token from that address",
        method="GET",
        path="/api/v1/me/",
        role="finops-api",
        expected=(200,),
    )
    rec.send(good)
    login = rec.probe.clients["login"]
    page = login.get(f"{base}/accounts/login/", timeout=REQUEST_TIMEOUT_S)
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    token = found.group(1) if found else ""
    referer = {"Referer": f"{base}/accounts/login/"}

    def sign_in(username: str, password: str, case: Case | None = None) -> None:
        form = {"csrfmiddlewaretoken": token, "username": username, "password": password}
        if case is None:
            login.post(
                f"{base}/accounts/login/",
                data=form,
                headers=referer,
                allow_redirects=False,
                timeout=REQUEST_TIMEOUT_S,
            )
        else:
            rec.send(case, data=form, headers=referer)

    for _ in range(BAD_ATTEMPTS - 1):
        sign_in("probe-victim", "wrong")
    case = Case(
        item=3,
        what=f"{BAD_ATTEMPTS} bad logins for user A (the last)",
        method="POST",
        path="/accounts/login/",
        role="login",
        expected=(429,),
    )
    sign_in("probe-victim", "wrong", case)
    case = Case(
        item=3,
        what="then a correct login for user B",
        method="POST",
        path="/accounts/login/",
        role="login",
        expected=(302,),
    )
    sign_in("probe-engineer", rec.probe.password, case)


def run_hostile(probe: Probe, *, last_day: str) -> list[Answer]:
    """Every case once, in an order where one cannot spoil another (the lockout last)."""
    rec = Recorder(probe)
    for case in PARAMETER_CASES:
        rec.send(case)
    _gate_cases(rec)
    _file_cases(rec, last_day)
    for case in ACCESS_CASES:
        rec.send(case)
    _lockout_cases(rec)
    return rec.answers
