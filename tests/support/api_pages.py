"""Read a whole paginated API list by following its `next` links, as a client would."""

from __future__ import annotations

from typing import Any

from django.test import Client


def walk_pages(client: Client, url: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The first page's body (a report's whole-set figures are on it) and every item over all
    pages, in order. Fails if a page is not 200 or the items do not add up to `count`."""
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code, response.content[:300])
    first = response.json()
    items = list(first["results"])
    body = first
    while body["next"] is not None:
        assert len(items) < first["count"], f"{url}: a page beyond count"
        response = client.get(body["next"])
        assert response.status_code == 200, (body["next"], response.status_code)
        body = response.json()
        assert body["count"] == first["count"]
        items.extend(body["results"])
    assert len(items) == first["count"], url
    return first, items
