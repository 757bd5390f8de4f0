"""Alert text as a chat channel or an email shows it, with the names that came from data inert.

An alert's message quotes names from the data (workloads, teams, models, providers, budget
names), which anyone who can send a record or create a budget controls. Pure: no Django.

- Slack (and Slack-compatible) webhook ``text``: ``&``, ``<`` and ``>`` are escaped as Slack
  requires (`slack_escaped`), so no ``<!channel>`` mention, ``<@user>`` or ``<url|label>`` link
  in a name survives; the line is one line.
- Email: the subject has no line break or other control character (`one_line`), so nothing can
  add a header; the body is plain text, where markup of any kind is not rendered.
"""

from __future__ import annotations

import re

MAX_SUBJECT_CHARS = 200
# C0 and C1 control characters (line breaks and tabs included), DEL, and the Unicode line and
# paragraph separators.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_SLACK_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def one_line(text: str) -> str:
    """The text with every run of control characters (CR and LF included) as one space."""
    return _CONTROLS.sub(" ", text).strip()


def slack_escaped(text: str) -> str:
    """The text with ``&``, ``<`` and ``>`` escaped as Slack's message formatting requires."""
    return text.translate(_SLACK_ESCAPES)


def chat_text(*, kind: str, message: str) -> str:
    """The one line a webhook's ``text`` carries: ``[kind] message``, escaped for Slack."""
    return slack_escaped(one_line(f"[{kind}] {message}"))


def email_subject(*, kind: str, message: str) -> str:
    """An email's subject: ``[kind] message`` on one line, at most MAX_SUBJECT_CHARS."""
    return one_line(f"[{kind}] {message}")[:MAX_SUBJECT_CHARS]


def email_body_text(text: str) -> str:
    """Text for a plain-text email body: control characters other than line breaks and tabs
    (which could confuse a terminal or a mail client) as spaces, CR LF as LF."""
    return re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", " ", text.replace("\r\n", "\n"))
