"""Search finds people as they type (issue 12): accents and case do not matter in names, and a
cadastre number is found with or without its prefix and dashes; the indexes that keep it fast at
100,000 parcels are the ones the plan reads (parcels.search)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.urls import reverse

from billing.selectors import parcel_search
from parcels import search
from parcels.models import Owner, Parcel


@pytest.fixture
def registry(make_parcel, owner_a, owner_b):
    """Carmen Irizarry Vélez owns LAJ-000123 and LAJ-001234; Luis Toro Ramos owns LAJ-000456."""
    make_parcel("LAJ-000123", owner_a)
    make_parcel("LAJ-001234", owner_a)
    make_parcel("LAJ-000456", owner_b)
    muñoz = Owner.objects.create(owner_key="OWN-C", name="JOSÉ MUÑOZ ÁLVAREZ")
    make_parcel("CAB-77-12", muñoz)


def codes(queryset) -> list[str]:
    return sorted(parcel.parcel_id for parcel in queryset)


@pytest.mark.django_db
@pytest.mark.parametrize("typed", ["velez", "Vélez", "VELEZ", "vÉlEz", "irizarry velez", "carmen"])
def test_a_name_is_found_whatever_the_accents_and_case(registry, typed):
    assert codes(parcel_search(query=typed)) == ["LAJ-000123", "LAJ-001234"]


@pytest.mark.django_db
@pytest.mark.parametrize("typed", ["munoz", "Muñoz", "alvarez", "jose munoz"])
def test_an_upper_case_name_with_accents_and_tilde(registry, typed):
    assert codes(parcel_search(query=typed)) == ["CAB-77-12"]


@pytest.mark.django_db
@pytest.mark.parametrize("typed, found", [
    ("LAJ-000123", ["LAJ-000123"]),
    ("laj-000123", ["LAJ-000123"]),
    ("laj000123", ["LAJ-000123"]),
    ("000123", ["LAJ-000123"]),
    ("000-123", ["LAJ-000123"]),
    ("123", ["LAJ-000123", "LAJ-001234"]),  # a part of the number finds every number holding it
    ("cab7712", ["CAB-77-12"]),
    ("77-12", ["CAB-77-12"]),
    ("laj", ["LAJ-000123", "LAJ-000456", "LAJ-001234"]),
])
def test_a_cadastre_number_with_or_without_prefix_and_dashes(registry, typed, found):
    assert codes(parcel_search(query=typed)) == found


@pytest.mark.django_db
@pytest.mark.parametrize("typed, found", [
    ("laj000123", "LAJ-000123"), (" LAJ-000123 ", "LAJ-000123"), ("000123", "LAJ-000123"), ("001-234", "LAJ-001234"),
    ("cab-7712", "CAB-77-12"), ("77-12", "CAB-77-12"),
    ("123", None), ("23", None),  # a part of a number names no parcel (LAJ-000023 is not LAJ-000123)
    ("LAJ-0001", None), ("000999", None), ("--", None), ("", None),
])
def test_a_form_takes_one_cadastre_number_as_it_is_typed(registry, typed, found):
    """Forms that name one parcel (a roll correction, the CLI, a certificate) take the number as
    typed: case and dashes do not matter, and its digits alone name it when one number ends so."""
    parcel = search.one_by_code(Parcel.objects.all(), "parcel_id", typed)
    assert (parcel.parcel_id if parcel else None) == found


@pytest.mark.django_db
def test_every_word_must_match_and_punctuation_alone_finds_nothing(registry):
    assert codes(parcel_search(query="velez 456")) == []
    assert codes(parcel_search(query="toro 456")) == ["LAJ-000456"]
    assert codes(parcel_search(query="OWN-B")) == ["LAJ-000456"]  # an owner key, exactly
    assert codes(parcel_search(query="- / .")) == []
    assert codes(parcel_search(query="%")) == []  # LIKE's wildcards are text here
    assert codes(parcel_search(query="vel_z")) == []
    assert codes(parcel_search(query="ve\x00lez")) == ["LAJ-000123", "LAJ-001234"]  # a NUL parts two words, "ve" and "lez"


@pytest.mark.django_db
def test_registry_owner_list_and_counter_pages_search_the_same_way(client, users, registry):
    client.force_login(users["authority"])
    page = client.get(reverse("parcels:parcel-list"), {"q": "velez"})
    assert page.status_code == 200
    assert codes(page.context["filter"].qs) == ["LAJ-000123", "LAJ-001234"]
    assert codes(client.get(reverse("parcels:parcel-list"), {"q": "laj000456"}).context["filter"].qs) == ["LAJ-000456"]
    owners = client.get(reverse("parcels:owner-list"), {"q": "muñoz"}).context["page"].object_list
    assert [owner.owner_key for owner in owners] == ["OWN-C"]
    client.force_login(users["collector"])
    counter = client.get(reverse("billing:counter"), {"q": "VELEZ"})
    assert counter.status_code == 200
    assert codes(counter.context["results"]) == ["LAJ-000123", "LAJ-001234"]


def plan(queryset) -> str:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.django_db
def test_the_plan_reads_the_trigram_indexes(registry):
    """With sequential scans priced out (as at 100,000 parcels), a name and a number are looked up
    through their GIN trigram indexes, not by folding every row. (Unordered: on a table of four
    rows the planner may rather walk the name index for an ORDER BY; bench/bench_search.py shows
    the ordered counter search at 100,000 parcels.)"""
    text = plan(search.parcels_matching(Parcel.objects.order_by(), "velez"))
    assert "owner_name_search" in text and "parcel_code_search" in text, text
    text = plan(search.owners_matching(Owner.objects.order_by(), "munoz"))
    assert "owner_name_search" in text, text


@pytest.mark.django_db
def test_the_database_folds_what_the_index_holds(registry):
    with connection.cursor() as cursor:
        cursor.execute("SELECT lajas_fold(%s), lajas_code(%s)", ["José MUÑOZ Vélez", "laj-000 123/á"])
        assert cursor.fetchone() == ("jose munoz velez", "LAJ000123A")


def test_words_drop_control_characters():
    assert search.words("  laj\x00 000123\t velez ") == ["laj", "000123", "velez"]
    assert len(search.words(" ".join(["x"] * 20))) == search.MAX_WORDS
