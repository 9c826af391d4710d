"""Search as people type it: accents, case, a cadastre number's prefix and dashes do not matter.

Clerks and landowners type "velez" for "Vélez", "laj000123" or "000123" for "LAJ-000123". Both
sides of a comparison go through the same two SQL functions (migration ``parcels.0003_search``),
so what the database folds and what it indexes are one and the same:

- ``lajas_fold(text)``: ``lower(unaccent(text))`` with PostgreSQL's ``unaccent`` extension;
  for names ("Vélez" → "velez", "Muñoz" → "munoz").
- ``lajas_code(text)``: the letters and digits of ``upper(unaccent(text))``; for cadastre
  numbers and owner keys ("laj-000123" → "LAJ000123").

Both are ``IMMUTABLE`` wrappers (``unaccent`` itself is only ``STABLE``), so GIN trigram indexes
(``pg_trgm``) can be built on them: a "contains" search of three or more characters then reads
the index instead of every row, which keeps the registry, the counter and the roll fast at
100,000 parcels (``bench/bench_search.py``; ``tests/parcels/test_search.py`` reads the plan).
"""

from __future__ import annotations

from django.db.models import Q, QuerySet, Value

# The two transforms live in ``parcels.lookups`` (the models index them, and this module reads the
# models): named here too, where migration 0003 and the other apps find them.
from .lookups import CodeKey, Fold

# Text longer than this is not a search: the page keeps the first words only.
MAX_WORDS = 8


def words(query: str) -> list[str]:
    """The words of a typed query (NUL bytes and other control characters are not text)."""
    cleaned = "".join(ch if ch.isprintable() else " " for ch in query)
    return cleaned.split()[:MAX_WORDS]


def name_matches(field: str, word: str) -> Q:
    """``field`` (a name) contains ``word``, whatever the accents and case."""
    return Q(**{f"{field}__lajas_fold__contains": Fold(Value(word))})


def code_matches(field: str, word: str) -> Q:
    """``field`` (a cadastre number or owner key) contains ``word`` without its dashes or spaces,
    so "LAJ-000123", "laj000123" and "000123" all find LAJ-000123. A word of punctuation alone
    matches nothing."""
    if not any(ch.isalnum() for ch in word):
        return Q(pk__in=[])
    return Q(**{f"{field}__lajas_code__contains": CodeKey(Value(word))})


def one_by_code(queryset: QuerySet, field: str, typed: str):
    """The one row of ``queryset`` whose cadastre number ``field`` is the one typed, whatever its
    case and dashes ("laj000123" → LAJ-000123), or typed without its letter prefix ("000123",
    "77-12" for CAB-77-12: all of the number after the prefix, not a part of it); ``None`` when
    there is none, or more than one."""
    if not any(ch.isalnum() for ch in typed):
        return None
    rows = list(queryset.filter(**{f"{field}__lajas_code": CodeKey(Value(typed))})[:2])
    key = "".join(ch for ch in typed.upper() if ch.isalnum())
    if not rows and key.isdigit():
        def after_prefix(row) -> str:
            return "".join(ch for ch in getattr(row, field).upper() if ch.isalnum()).lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        candidates = queryset.filter(**{f"{field}__lajas_code__endswith": CodeKey(Value(typed))})
        rows = [row for row in candidates[:50] if after_prefix(row) == key]
    return rows[0] if len(rows) == 1 else None


def key_is(field: str, word: str) -> Q:
    """An owner key typed as it is or in other case ("own-b" for OWN-B). Keys are stored as
    issued, mostly upper case; the unique index answers both forms."""
    return Q(**{f"{field}__in": sorted({word, word.upper()})})


def parcels_matching(parcels: QuerySet, query: str) -> QuerySet:
    """The ``parcels`` whose cadastre number, owner name or owner key contains every word typed.

    Each word is looked up through its own index (cadastre numbers, owner names) in a subquery,
    and the parcels are kept by id: one ``OR`` across the parcel and owner tables would make
    PostgreSQL fold every row of both instead."""
    from .models import Owner, Parcel

    for word in words(query):
        by_code = Parcel.objects.filter(code_matches("parcel_id", word)).values("pk")
        owners = Owner.objects.filter(name_matches("name", word) | key_is("owner_key", word)).values("pk")
        parcels = parcels.filter(Q(pk__in=by_code) | Q(owner__in=owners))
    return parcels


def owners_matching(owners: QuerySet, query: str) -> QuerySet:
    """The ``owners`` whose name contains every word typed, or whose key is the word typed."""
    for word in words(query):
        owners = owners.filter(name_matches("name", word) | key_is("owner_key", word))
    return owners
