"""`make probe`'s second phase: hostile requests over HTTP to gunicorn.

One request per case, each with the status it must get; the probe fails when any answer is 5xx
or not the expected one. The static cases are `PARAMETER_CASES` and `ACCESS_CASES`; the ones that
need ids (gates, deletions) or a check of the body are built while the probe runs (`run_hostile`).
"""

from __future__ import annotations

import functools
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
    """One request: the area it probes, what it tries, and the statuses that are right."""

    area: str
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
    return Case(area="parameters", what=what, method="GET", path=path, role=role, expected=(400,))


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
    Case(area="access", what=what, method="GET", path=path, role=role, expected=expected)
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
            a.case.area,
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
            "Hostile requests, sent over HTTP to the same gunicorn after the deletions. "
            "A case passes when its status is the expected one "
            "(never 5xx) and, where the case checks the body, the check holds; the message is "
            f"the first {MESSAGE_CHARS} characters of what the answer says. "
            f"{len(answers) - failed} of {len(answers)} passed.",
            "",
            markdown_table(
                [
                    "area",
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
    land_live: Callable[[], str] = lambda: ""


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
        print(
            f"probe: {case.what[:50]}: {case.method} {case.path[:60]} -> {response.status_code}"
            f"{f' ({problem})' if problem else ''}",
            flush=True,
        )
        return response

    def note(self, case: Case, problem: str) -> None:
        """A case that could not be sent (what it needed is missing): recorded as failed."""
        self.answers.append(Answer(case=case, status=0, message="", problem=problem))

    def checked(self, case: Case, *, problem: str, message: str) -> None:
        """A case checked in this process rather than sent (its status is the expected one
        when the check holds, else 0)."""
        status = case.expected[0] if not problem else 0
        self.answers.append(Answer(case=case, status=status, message=message, problem=problem))
        print(f"probe: {case.what[:60]} -> {problem or 'ok'}", flush=True)


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
    """Gates on recommendations, and deleting a benchmark upload a gate compares."""
    probe = rec.probe
    runs: dict[str, int] = {}
    for side in ("baseline", "candidate"):
        fixture = BENCHMARK_FIXTURES / f"vllm_{side}.json"
        case = Case(
            area="gates",
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
            area="gates",
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
        area="gated deletes",
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
            area="file names",
            what=f"token log named with {size} bytes",
            method="POST",
            path="/api/v1/uploads/",
            role="finops-api",
            expected=(202,),
        )
        _upload_case(rec, case, name, _csv(f"long-name-{size}", 3, day=last_day, cost="0.01"), kept)
    case = Case(
        area="escaping",
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
        area="escaping",
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
        area="access",
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
        area="lockout",
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
        area="lockout",
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
        area="lockout",
        what=f"{BAD_ATTEMPTS} bad logins for user A (the last)",
        method="POST",
        path="/accounts/login/",
        role="login",
        expected=(429,),
    )
    sign_in("probe-victim", "wrong", case)
    case = Case(
        area="lockout",
        what="then a correct login for user B",
        method="POST",
        path="/accounts/login/",
        role="login",
        expected=(302,),
    )
    sign_in("probe-engineer", rec.probe.password, case)


# --- Poison records, future dates, alert text, oversized bodies --------------------------------

NUL = "probe\x00nul"
SURROGATE = "probe\ud800surrogate"
SLACK_HOSTILE = "<!channel> <https://evil.example/sso|Spend portal: sign in again> & co"
SLACK_ESCAPED = (
    "&lt;!channel&gt; &lt;https://evil.example/sso|Spend portal: sign in again&gt; &amp; co"
)
OTLP_PATH = "/v1/traces"
LITELLM_PATH = "/api/v1/ingest/litellm/"
NOTE_BYTES = 3 * 1024 * 1024
LANDING_TIMEOUT_S = 120


@dataclass(frozen=True, kw_only=True)
class PoisonVariant:
    """One live record with text no database stores: which receiver, what it changes, and
    the field the receiver's reject must name."""

    what: str
    receiver: str  # "otlp" (OTLP/JSON) or "litellm" (the LiteLLM callback)
    change: Mapping[str, str]
    field: str


# The nine of the finding: a NUL in the model, workload, service.name, end user and LiteLLM id,
# and lone surrogates in a few of them.
POISON_VARIANTS: tuple[PoisonVariant, ...] = (
    PoisonVariant(
        what="NUL in model", receiver="otlp", change={"gen_ai.request.model": NUL}, field="model"
    ),
    PoisonVariant(
        what="NUL in workload", receiver="otlp", change={"workload": NUL}, field="workload"
    ),
    PoisonVariant(
        what="NUL in service.name", receiver="otlp", change={"service.name": NUL}, field="caller"
    ),
    PoisonVariant(
        what="NUL in end user", receiver="otlp", change={"user.id": NUL}, field="end_user"
    ),
    PoisonVariant(what="NUL in id", receiver="litellm", change={"id": NUL}, field="request_id"),
    PoisonVariant(
        what="NUL in end_user", receiver="litellm", change={"end_user": NUL}, field="end_user"
    ),
    PoisonVariant(
        what="lone surrogate in model",
        receiver="otlp",
        change={"gen_ai.request.model": SURROGATE},
        field="model",
    ),
    PoisonVariant(
        what="lone surrogate in service.name",
        receiver="otlp",
        change={"service.name": SURROGATE},
        field="caller",
    ),
    PoisonVariant(
        what="lone surrogate in workload",
        receiver="litellm",
        change={"workload": SURROGATE},
        field="workload",
    ),
)


def otlp_span_body(
    span_id: str, *, start_ns: int, change: Mapping[str, str] | None = None
) -> bytes:
    """An OTLP/JSON export of one gen_ai chat span, with `change` applied to its attributes
    (`service.name` to its resource's). Written with ASCII escapes, as JSON writers do, so a
    NUL or a lone surrogate travels as `\\u0000` / `\\ud800`."""
    change = dict(change or {})
    resource = {"service.name": change.pop("service.name", "probe-live")}
    attributes: dict[str, object] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 20,
        "workload": "probe-live",
        **change,
    }

    def values(items: Mapping[str, object]) -> list[dict[str, object]]:
        return [
            {
                "key": key,
                "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v},
            }
            for key, v in items.items()
        ]

    span = {
        "traceId": span_id.rjust(32, "0"),
        "spanId": span_id.rjust(16, "0")[-16:],
        "name": "chat",
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(start_ns + 1_000_000_000),
        "attributes": values(attributes),
    }
    document = {
        "resourceSpans": [
            {"resource": {"attributes": values(resource)}, "scopeSpans": [{"spans": [span]}]}
        ]
    }
    return json.dumps(document).encode()


def litellm_call_body(call_id: str, *, start_s: float, change: Mapping[str, str]) -> bytes:
    """A LiteLLM callback post of one call, with `change` applied (`workload` goes into its
    `spend_logs_metadata`)."""
    change = dict(change)
    workload = change.pop("workload", "probe-live")
    record = {
        "id": call_id,
        "call_type": "acompletion",
        "model": "gpt-4o-mini",
        "custom_llm_provider": "openai",
        "startTime": start_s,
        "endTime": start_s + 1.0,
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "status": "success",
        "end_user": "probe-user",
        "metadata": {"spend_logs_metadata": {"workload": workload}},
        **change,
    }
    return json.dumps([record]).encode()


def refused_count(receiver: str, body: Any) -> int:
    """How many records a receiver's 200 answer says it refused."""
    if receiver == "otlp":
        return int(body.get("partialSuccess", {}).get("rejectedSpans", 0) or 0)
    return int(body.get("rejected", 0))


def refusal_problem(receiver: str, response: Any, *, field: str, says: str) -> str:
    """Why the answer is not one refused record naming `field` and saying `says` ("" if it
    is)."""
    try:
        body = response.json()
    except ValueError:
        return "the answer is not JSON"
    if refused_count(receiver, body) != 1:
        return f"refused {refused_count(receiver, body)} records, not 1"
    text = json.dumps(body)
    if field not in text or says not in text:
        return f"the answer does not name {field!r} with {says!r}"
    return ""


def _refusal_check(response: Any, *, receiver: str, field: str, says: str) -> str:
    return refusal_problem(receiver, response, field=field, says=says)


def _poison_cases(rec: Recorder) -> None:
    """Each poison record refused without a 5xx; a future-dated span refused; a clean record
    sent after them lands on the next landing pass."""
    now = time.time()
    start_ns = int((now - 3600) * 1e9)
    for number, variant in enumerate(POISON_VARIANTS, start=1):
        says = "NUL" if NUL in variant.change.values() else "lone surrogate"
        if variant.receiver == "otlp":
            path, body = (
                OTLP_PATH,
                otlp_span_body(f"9{number:03d}", start_ns=start_ns, change=variant.change),
            )
        else:
            path = LITELLM_PATH
            body = litellm_call_body(f"probe-{number}", start_s=now - 3600, change=variant.change)
        case = Case(
            area="live records",
            what=f"poison live record: {variant.what} ({variant.receiver})",
            method="POST",
            path=path,
            role="finops-api",
            expected=(200,),
        )
        rec.send(
            case,
            data=body,
            headers={"Content-Type": "application/json"},
            check=functools.partial(
                _refusal_check, receiver=variant.receiver, field=variant.field, says=says
            ),
            describe=lambda r: "refused alone, nothing kept",
        )
    future_ns = int(time.mktime((2099, 6, 1, 0, 0, 0, 0, 0, 0)) * 1e9)
    case = Case(
        area="escaping",
        what="span dated 2099-06-01",
        method="POST",
        path=OTLP_PATH,
        role="finops-api",
        expected=(200,),
    )
    rec.send(
        case,
        data=otlp_span_body("9800", start_ns=future_ns),
        headers={"Content-Type": "application/json"},
        check=lambda r: refusal_problem("otlp", r, field="startTimeUnixNano", says="future"),
        describe=lambda r: "refused: more than a day in the future",
    )
    clean_id = "9900"
    case = Case(
        area="live records",
        what="then a clean span lands on the next pass",
        method="POST",
        path=OTLP_PATH,
        role="finops-api",
        expected=(200,),
    )
    rec.send(
        case,
        data=otlp_span_body(clean_id, start_ns=start_ns),
        headers={"Content-Type": "application/json"},
        check=lambda r: _landing_problem(rec.probe, clean_id),
        describe=lambda r: "landed; no batch set aside",
    )


def _landing_problem(probe: Probe, span_id: str) -> str:
    """Land what waits, then why the span did not land or a batch was set aside ("")."""
    key = f"{span_id.rjust(32, '0')}/{span_id.rjust(16, '0')[-16:]}"
    deadline = time.monotonic() + LANDING_TIMEOUT_S
    while time.monotonic() < deadline:
        probe.land_live()
        landed = probe.sql(
            f"SELECT COUNT(*) FROM audit_app_liverecordkey WHERE key = '{key}'"  # noqa: S608
        )
        if landed:
            set_aside = probe.sql("SELECT COUNT(*) FROM audit_app_livebatch WHERE error <> ''")
            return f"{set_aside} batches set aside" if set_aside else ""
        time.sleep(1)
    return f"the clean span did not land in {LANDING_TIMEOUT_S} s"


def slack_text_problem() -> str:
    """Why a hostile workload's Slack text is not escaped ("" when it is)."""
    from audit_app.budgets.alert_text import chat_text, email_subject

    text = chat_text(kind="Spend anomaly", message=f"{SLACK_HOSTILE} on gpt-4o spent $17.50.")
    if SLACK_ESCAPED not in text or "<" in text or ">" in text:
        return f"not escaped: {text[:60]}"
    subject = email_subject(kind="Budget", message="ops\r\nBcc: victim@example.com")
    if "\r" in subject or "\n" in subject:
        return "the email subject holds a line break"
    return ""


def _alert_text_and_body_cases(rec: Recorder) -> None:
    """A hostile workload's Slack text (checked here, in this process); a 3 MB acknowledge
    note answered with the API's JSON error."""
    case = Case(
        area="parameters",
        what="Slack text of an alert on a hostile workload",
        method="-",
        path="budgets.alert_text.chat_text",
        role="-",
        expected=(200,),
    )
    problem = slack_text_problem()
    rec.checked(case, problem=problem, message="" if problem else "&, < and > escaped")
    alert_id = rec.probe.sql(
        "INSERT INTO audit_app_alert (kind, anomaly_key, message, details, created_at, "
        "acknowledgement_note) VALUES ('anomaly', 'probe-note', 'probe alert', '{}', "
        "CURRENT_TIMESTAMP, '') RETURNING id"
    )
    case = Case(
        area="body size",
        what="acknowledge note of 3 MB",
        method="POST",
        path=f"/api/v1/alerts/{alert_id}/acknowledge/",
        role="finops-api",
        expected=(413,),
    )
    rec.send(
        case,
        json={"note": "n" * NOTE_BYTES},
        check=lambda r: "" if "json" in r.headers.get("Content-Type", "") else "not JSON",
    )


def run_hostile(probe: Probe, *, last_day: str) -> list[Answer]:
    """Every case once, in an order where one cannot spoil another (the lockout last)."""
    rec = Recorder(probe)
    for case in PARAMETER_CASES:
        rec.send(case)
    _gate_cases(rec)
    _file_cases(rec, last_day)
    for case in ACCESS_CASES:
        rec.send(case)
    _poison_cases(rec)
    _alert_text_and_body_cases(rec)
    _lockout_cases(rec)
    return rec.answers
