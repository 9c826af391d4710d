"""Irreversible acts go through their review page (``parcels.review``): post the act's form,
get the review page, and post its confirmation with the fingerprint it carries."""

from __future__ import annotations

import re
from typing import Any

from parcels import review

FINGERPRINT = re.compile(r'name="' + review.FIELD + r'" value="([0-9a-f]+)"')


def fingerprint_in(response: Any) -> str:
    """The fingerprint of the review page in ``response`` (fails if it is not a review page)."""
    assert response.status_code == 200, response.status_code
    found = FINGERPRINT.findall(response.content.decode())
    assert len(found) == 1, "not a review page"
    return found[0]


def post_reviewed(client: Any, url: str, data: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    """Post the act's form (which shows the review page), then the review page's confirmation."""
    data = dict(data or {})
    shown = client.post(url, data)
    return client.post(url, {**data, review.FIELD: fingerprint_in(shown)}, **kwargs)
