"""Secrets shown masked: what a page or an answer says of a webhook URL or a URL's credentials.

- A webhook URL (a Slack webhook URL is a secret) shows as its scheme, host and the last four
  characters: ``https://hooks.slack.com/…/XXXX``.
- A URL with credentials shows its user name and password, and each query value, as ``***``:
  ``http://***:***@host/path?token=***``; the rest (scheme, host, path) as it is.

A masked value sent back by a writer's form or PATCH stands for the stored value it masks
(`unmasked`), so editing other fields never overwrites a secret with its mask.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

HIDDEN = "***"
ELLIPSIS = "…"
VISIBLE_TAIL = 4


def _host(url: str) -> tuple[str, str]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "", ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return parts.scheme, f"{host}:{port}" if port else host


def mask_webhook(url: str) -> str:
    """``scheme://host/…/`` and the URL's last four characters."""
    scheme, host = _host(url)
    tail = url[-VISIBLE_TAIL:] if len(url) > VISIBLE_TAIL else ""
    if not scheme or not host:
        return f"{ELLIPSIS}{tail}"
    return f"{scheme}://{host}/{ELLIPSIS}/{tail}"


def mask_url_credentials(url: str) -> str:
    """The URL with its user name, password and query values hidden (unchanged without any)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    if not (parts.username or parts.password or parts.query):
        return url
    netloc = parts.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if port:
        netloc = f"{netloc}:{port}"
    if parts.username or parts.password:
        netloc = f"{HIDDEN}:{HIDDEN}@{netloc}" if parts.password else f"{HIDDEN}@{netloc}"
    query = urlencode([(key, HIDDEN) for key, _ in parse_qsl(parts.query, True)], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def unmasked(sent: str, stored: Iterable[str], mask: Callable[[str], str]) -> str:
    """The stored value ``sent`` is the mask of (when it differs from it), else ``sent``."""
    for value in stored:
        if value and sent == mask(value) and sent != value:
            return value
    return sent
