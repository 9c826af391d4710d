"""Billing's tests, and what several of them read the books with."""

from __future__ import annotations

from datetime import date


def delinquent(*, as_of: date, **filters) -> list:
    """¶12: the delinquent list as of ``as_of`` as the page keeps it (``delinquency.kept_lines``,
    under the books' version), each line with its parcel and charge (``with_records``)."""
    from billing import delinquency

    return delinquency.with_records(delinquency.kept_lines(delinquency.Filters(as_of=as_of, **filters)))
