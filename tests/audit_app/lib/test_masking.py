"""Secrets shown masked: webhook URLs by scheme, host and last four characters; URL credentials
and query values hidden; a masked value sent back stands for the stored one."""

from __future__ import annotations

import pytest

from audit_app.lib.masking import mask_url_credentials, mask_webhook, unmasked

SLACK = "https://hooks.slack.com/services/T0001/B0002/abcdEFGHijklMNOPqrst9876"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (SLACK, "https://hooks.slack.com/…/9876"),
        ("http://127.0.0.1:8080/hook", "http://127.0.0.1:8080/…/hook"),
        ("https://[2001:db8::1]:8443/h/xyz1", "https://[2001:db8::1]:8443/…/xyz1"),
        ("https://user:pw@example.com/a/b/c/zz99", "https://example.com/…/zz99"),
        ("nourl", "…ourl"),
    ],
)
def test_a_webhook_shows_scheme_host_and_last_four(url: str, shown: str) -> None:
    assert mask_webhook(url) == shown


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "http://ann:s3cret@billing.example.com/exports/f.csv?token=abc&day=1",
            "http://***:***@billing.example.com/exports/f.csv?token=***&day=***",
        ),
        ("https://tok@host:8443/f.csv", "https://***@host:8443/f.csv"),
        ("https://host/f.csv?sig=x#frag", "https://host/f.csv?sig=***#frag"),
        ("https://host/plain.csv", "https://host/plain.csv"),
        ("", ""),
    ],
)
def test_url_credentials_and_query_values_are_hidden(url: str, shown: str) -> None:
    assert mask_url_credentials(url) == shown


def test_a_masked_value_sent_back_stands_for_the_stored_one() -> None:
    stored = [SLACK, "https://example.com/other/hook"]
    assert unmasked("https://hooks.slack.com/…/9876", stored, mask_webhook) == SLACK
    assert unmasked("https://hooks.slack.com/…/0000", stored, mask_webhook) == (
        "https://hooks.slack.com/…/0000"
    )
    new = "https://example.com/new/hook"
    assert unmasked(new, stored, mask_webhook) == new
    # A value without secrets masks to itself and is simply kept.
    assert unmasked("https://host/f.csv", ["https://host/f.csv"], mask_url_credentials) == (
        "https://host/f.csv"
    )
