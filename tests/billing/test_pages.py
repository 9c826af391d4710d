"""The Collector's pages through the Django test client: who may open each, a payment at the
counter from search to receipt, double submits, stale totals, partial payments, the ¶9 credit
line, voids by a supervisor, statements and the day report with its over/short."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from billing.models import Payment, Receipt
from billing.services import counter
from billing.services.installments import roll_finalize
from levy.services import estimate_certify, estimate_enter, levy_compute
from parcels.models import Parcel
from parcels.roles import ROLES
from tests.clock import localdate_on, on_day
from tests.conftest import EXAMPLE_1
from tests.review import post_reviewed

YEAR = "2026-2027"
TODAY = date(2026, 10, 15)  # the July half of 2026-2027 is two periods late (D = 2026-09-01)
# Example 1 of the worked examples; P5 belongs to another owner (owners do not change the amounts).


@pytest.fixture(autouse=True)
def frozen_today(monkeypatch):
    """The counter pays on ``timezone.localdate()``; pin it so surcharges are the worked example's."""
    monkeypatch.setattr(timezone, "localdate", lambda *args, **kwargs: TODAY)


def build_district(users) -> None:
    estimate_enter(acting_user=users["authority"], fiscal_year=YEAR, om_estimate=Decimal("100000.00"),
                   reserve=Decimal("1500.00"), misc_income=Decimal("7500.00"), surplus=Decimal("4000.00"))
    estimate_certify(acting_user=users["authority"], fiscal_year=YEAR)
    levy_compute(acting_user=users["hacienda"], fiscal_year=YEAR)
    roll_finalize(acting_user=users["hacienda"], fiscal_year=YEAR, today=date(2026, 6, 30))


@pytest.fixture
def district_1(make_parcel, owner_a, owner_b, users):
    """Example 1, finalized on 2026-06-30 (recorded that day): P4's halves are $6,930.90 each."""
    with on_day(date(2026, 6, 30)):
        for parcel_id, gravity in EXAMPLE_1:
            make_parcel(parcel_id, owner_b if parcel_id == "P5" else owner_a, gravity=gravity)
        build_district(users)
    return {parcel.parcel_id: parcel for parcel in Parcel.objects.all()}


@pytest.fixture
def credit_district(make_parcel, owner_a, users):
    """Example 1 plus PC, 40 gravity acres with 25% of its levy credited for ceded water rights (¶7)."""
    for parcel_id, gravity in EXAMPLE_1:
        make_parcel(parcel_id, owner_a, gravity=gravity)
    make_parcel("PC", owner_a, gravity="40", credit="25")
    build_district(users)
    return Parcel.objects.get(parcel_id="PC")


@pytest.fixture
def landowner_b(make_user, owner_b):
    return make_user("u_landowner_b", "landowner", owner_b)


def url(name: str, *args) -> str:
    return reverse(f"billing:{name}", args=args)


def text(response) -> str:
    return response.content.decode()


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def pay(users, parcel, amount: str, *, method: str = "cash", on: date = TODAY, user: str = "collector", reference: str = ""):
    """A payment at the counter on ``on``: the counter's today (``frozen_today`` pins it), moved there for the call."""
    with localdate_on(on):
        return counter.payment_record(acting_user=users[user], parcel=parcel, amount=Decimal(amount), paid_on=on,
                                       method=method, reference=reference)


def counter_post(client, parcel, **overrides):
    """GET the counter page, then POST its form as rendered (with overrides)."""
    page = client.get(url("counter-parcel", parcel.pk))
    assert page.status_code == 200
    form = page.context["form"]
    data = {name: form[name].value() for name in ("amount", "method", "reference", "idempotency_key", "expected_total_due")}
    data = {k: ("" if v is None else v) for k, v in data.items()}
    data.update(overrides)
    return client.post(url("counter-parcel", parcel.pk), data), data


# ---------------------------------------------------------------------------------------------
# Who may open what
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def pages(district_1, users):
    """A receipt on owner A's P1 and one on owner B's P5."""
    own = pay(users, district_1["P1"], "100.00")
    other = pay(users, district_1["P5"], "100.00")
    return {"P1": district_1["P1"], "P5": district_1["P5"], "own": own, "other": other}


def page_urls(pages) -> dict[str, str]:
    return {
        "counter": url("counter") + "?q=P",
        "counter-parcel": url("counter-parcel", pages["P1"].pk),
        "statement": url("statement", pages["P1"].pk),
        "statement-other": url("statement", pages["P5"].pk),
        "receipt": url("receipt", pages["own"].pk),
        "receipt-other": url("receipt", pages["other"].pk),
        "day-report": url("day-report"),
    }


EXPECTED = {  # role → status of each page; the landowner owns P1 but not P5
    "collector": {"counter": 200, "counter-parcel": 200, "statement": 200, "statement-other": 200, "receipt": 200,
                  "receipt-other": 200, "day-report": 200},
    "supervisor": {"counter": 200, "counter-parcel": 200, "statement": 200, "statement-other": 200, "receipt": 200,
                   "receipt-other": 200, "day-report": 200},
    "hacienda": {"counter": 403, "counter-parcel": 403, "statement": 200, "statement-other": 200, "receipt": 200,
                 "receipt-other": 200, "day-report": 403},
    "auditor": {"counter": 403, "counter-parcel": 403, "statement": 200, "statement-other": 200, "receipt": 200,
                "receipt-other": 200, "day-report": 403},
    "authority": {"counter": 403, "counter-parcel": 403, "statement": 403, "statement-other": 403, "receipt": 403,
                  "receipt-other": 403, "day-report": 403},
    "landowner": {"counter": 403, "counter-parcel": 403, "statement": 200, "statement-other": 404, "receipt": 200,
                  "receipt-other": 404, "day-report": 403},
}


def test_every_role_is_covered():
    assert set(EXPECTED) == set(ROLES)


@pytest.mark.django_db
def test_anonymous_visitors_are_sent_to_login(client, pages):
    for name, path in page_urls(pages).items():
        response = client.get(path)
        assert response.status_code == 302 and response.url.startswith(reverse("login")), name
    response = client.post(url("void", pages["own"].payment_id), {"reason": "x"})
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
    assert not hasattr(Payment.objects.get(pk=pages["own"].payment_id), "void")


@pytest.mark.django_db
@pytest.mark.parametrize("role", sorted(EXPECTED))
def test_role_access(client, pages, users, role):
    client.force_login(users[role])
    for name, path in page_urls(pages).items():
        assert client.get(path).status_code == EXPECTED[role][name], (role, name)
    # The void is a POST for supervisors only; a blank reason changes nothing.
    response = client.post(url("void", pages["own"].payment_id), {"reason": ""})
    assert response.status_code == (200 if role == "supervisor" else 403), role
    assert not hasattr(Payment.objects.get(pk=pages["own"].payment_id), "void")


@pytest.mark.django_db
def test_a_user_without_a_role_gets_403_and_the_other_landowner_sees_only_theirs(client, pages, django_user_model,
                                                                                 landowner_b):
    client.force_login(django_user_model.objects.create_user("u_nobody", password=None))
    for name, path in page_urls(pages).items():
        assert client.get(path).status_code == 403, name
    client.force_login(landowner_b)
    assert client.get(url("statement", pages["P5"].pk)).status_code == 200
    assert client.get(url("receipt", pages["other"].pk)).status_code == 200
    assert client.get(url("receipt", pages["own"].pk)).status_code == 404
    assert client.get(url("statement", pages["P1"].pk)).status_code == 404


@pytest.mark.django_db
def test_void_is_post_only(client, pages, users):
    client.force_login(users["supervisor"])
    assert client.get(url("void", pages["own"].payment_id)).status_code == 405


@pytest.mark.django_db
def test_navigation_links_by_role(client, users):
    client.force_login(users["collector"])
    body = text(client.get(reverse("home")))
    assert url("counter") in body and url("day-report") in body
    client.force_login(users["hacienda"])
    body = text(client.get(reverse("home")))
    assert url("counter") not in body and url("day-report") not in body


# ---------------------------------------------------------------------------------------------
# The counter
# ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_search_by_cadastre_or_owner_name_in_few_queries(client, district_1, users, django_assert_max_num_queries):
    client.force_login(users["collector"])
    # session (4 with its save), user, roles, second-factor device, office (2), search, and once per sign-in
    # the last payment form sent before it (shared cache)
    with django_assert_max_num_queries(11):
        response = client.get(url("counter"), {"q": "p4"})
    assert [p.parcel_id for p in response.context["results"]] == ["P4"]
    assert url("counter-parcel", district_1["P4"].pk) in text(response)
    response = client.get(url("counter"), {"q": "toro ramos"})  # owner B, Luis Toro Ramos
    assert [p.parcel_id for p in response.context["results"]] == ["P5"]
    response = client.get(url("counter"), {"q": "nadie"})
    assert response.context["results"] == [] and "Ningún predio" in text(response)
    response = client.get(url("counter"))
    assert response.status_code == 200 and response.context["results"] == []


@pytest.mark.django_db
def test_payment_at_the_counter_from_search_to_receipt(client, district_1, users):
    """Worked example 1: P4's July half, $6,930.90 due 2026-07-01, last day 2026-08-31, paid
    2026-10-15 with two periods of ½% begun: $69.31 surcharge, $7,000.21 in all."""
    client.force_login(users["collector"])
    p4 = district_1["P4"]
    page = client.get(url("counter-parcel", p4.pk))
    body = text(page)
    for shown in ("$6,930.90", "$69.31", "$7,000.21", "½% × 2 meses sobre $6,930.90", "01/07/2026", "31/08/2026",
                  "gravamen", "Secretario de Hacienda", "¶11", "¶13"):
        assert shown in body, shown
    form = page.context["form"]
    assert form["amount"].value() == "7,000.21" and form["expected_total_due"].value() == "7000.21"
    assert re.fullmatch(r"[0-9a-f]{32}", form["idempotency_key"].value())

    response, _data = counter_post(client, p4)
    receipt = Receipt.objects.get()
    assert response.status_code == 302 and response.url == url("receipt", receipt.pk)
    payment = receipt.payment
    assert (payment.paid_on, payment.amount.amount, payment.method, payment.collector) == (TODAY, Decimal("7000.21"), "cash",
                                                                                          users["collector"])
    page = client.get(response.url)
    body = text(page)
    assert "Pago registrado. Recibo LAJ-2026-2027-000001." in messages_of(page)
    for shown in ("LAJ-2026-2027-000001", "15 de octubre de 2026", "Carmen Irizarry Vélez", "P4", "75.5000",
                  "$13,861.80",  # the year's O&M charge (¶9)
                  "0.00 % = $0.00",  # the credit line is printed even when there is no credit (¶9)
                  "$6,930.90", "$69.31", "$7,000.21", "½% × 2 meses sobre $6,930.90", "Efectivo", "¶11"):
        assert shown in body, shown
    assert "Pago parcial" not in body and "ANULADO" not in body
    assert 'data-print' in body and "billing/print.js" in body
    # the statement now shows the July half paid and the January half not yet due
    statement = client.get(url("statement", p4.pk)).context["statement"]
    assert statement.total_due == Decimal("0.00") and statement.total_balance == Decimal("6930.90")


@pytest.mark.django_db
def test_the_receipt_prints_the_credit_for_ceded_water_rights(client, credit_district, users):
    """¶9: PC's O&M charge $6,930.92 less 25% credited ($1,732.73) is $5,198.19 a year, in halves of
    $2,599.10 and $2,599.09; the July half is late by two periods on 2026-10-15."""
    client.force_login(users["collector"])
    response, _data = counter_post(client, credit_district)
    assert response.status_code == 302
    body = text(client.get(response.url))
    for shown in ("$6,930.92", "25.00 % = $1,732.73", "$5,198.19", "$2,599.10", "$25.99", "$2,625.09",
                  "Crédito por derechos de agua cedidos (¶7)", "Contribución impuesta y crédito (¶9)"):
        assert shown in body, shown
    receipt = Receipt.objects.get()
    assert receipt.snapshot["applications"][0]["credit"] == "1732.73"


@pytest.mark.django_db
def test_a_double_submitted_form_records_one_payment(client, district_1, users):
    client.force_login(users["collector"])
    first, data = counter_post(client, district_1["P1"])
    again = client.post(url("counter-parcel", district_1["P1"].pk), data)
    assert first.status_code == again.status_code == 302 and first.url == again.url
    assert Payment.objects.count() == 1 and Receipt.objects.count() == 1


@pytest.mark.django_db
def test_a_stale_total_is_refused_with_the_current_figures_and_nothing_lost(client, district_1, users):
    client.force_login(users["collector"])
    p4 = district_1["P4"]
    page = client.get(url("counter-parcel", p4.pk))
    form = page.context["form"]
    data = {"amount": "7,000.21", "method": "check", "reference": "CHK-1234",
            "idempotency_key": form["idempotency_key"].value(), "expected_total_due": form["expected_total_due"].value()}
    pay(users, p4, "1000.00", user="supervisor")  # another window took a payment meanwhile
    response = client.post(url("counter-parcel", p4.pk), data)
    assert response.status_code == 200
    body = text(response)
    assert "La cuenta cambió mientras se cobraba (ahora se deben $6,000.21)" in body
    assert Payment.objects.count() == 1  # only the supervisor's
    again = response.context["form"]
    # what the collector typed is still there; the hidden fields now match the figures shown
    assert (again["amount"].value(), again["method"].value(), again["reference"].value()) == ("7,000.21", "check", "CHK-1234")
    assert again["expected_total_due"].value() == "6000.21" and again["idempotency_key"].value() != data["idempotency_key"]
    assert response.context["statement"].total_due == Decimal("6000.21") and "$6,000.21" in body
    # reviewed, the collector submits the re-rendered form and it goes through
    retry = {name: again[name].value() for name in data}
    retry["amount"] = "6000.21"
    assert client.post(url("counter-parcel", p4.pk), retry).status_code == 302
    assert Payment.objects.count() == 2


@pytest.mark.django_db
def test_a_partial_payment_shows_what_remains(client, district_1, users):
    client.force_login(users["collector"])
    response, _data = counter_post(client, district_1["P4"], amount="$1,000.00")
    assert response.status_code == 302
    body = text(client.get(response.url))
    assert "Pago parcial: quedan $6,000.21 por pagar." in body and "¶13" in body
    assert "$69.31" in body and "$930.69" in body  # surcharge first, then principal (¶12)
    assert Receipt.objects.get().snapshot["total_due_after"] == "6000.21"


@pytest.mark.django_db
def test_form_errors_keep_the_page(client, district_1, users):
    client.force_login(users["collector"])
    for overrides, message in (({"method": "check", "reference": ""}, "Indique el número del cheque"),
                               ({"method": "transfer", "reference": " "}, "Indique el número del cheque"),
                               ({"amount": "0"}, ""), ({"amount": "12.345"}, ""), ({"amount": "diez"}, "")):
        response, _data = counter_post(client, district_1["P1"], **overrides)
        assert response.status_code == 200 and response.context["form"].errors, overrides
        assert message in text(response)
    assert not Payment.objects.exists()
    response, _data = counter_post(client, district_1["P1"], method="check", reference="CHK-77", amount="9,180.00")
    assert response.status_code == 302
    assert Payment.objects.get().reference == "CHK-77"


# ---------------------------------------------------------------------------------------------
# Voids
# ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_supervisor_voids_a_payment_and_the_receipt_says_so(client, district_1, users):
    receipt = pay(users, district_1["P2"], "22950.00", method="check", reference="CHK-9")
    client.force_login(users["collector"])
    page = client.get(url("receipt", receipt.pk))
    assert page.context["void_form"] is None and url("void", receipt.payment_id) not in text(page)
    assert client.post(url("void", receipt.payment_id), {"reason": "Cheque devuelto"}).status_code == 403

    client.force_login(users["supervisor"])
    page = client.get(url("receipt", receipt.pk))
    assert url("void", receipt.payment_id) in text(page)
    response = post_reviewed(client, url("void", receipt.payment_id), {"reason": "Cheque devuelto por el banco"})
    assert response.status_code == 302 and response.url == url("receipt", receipt.pk)
    page = client.get(response.url)
    body = text(page)
    assert "ANULADO" in body and "Cheque devuelto por el banco" in body and "15 de octubre de 2026" in body
    assert page.context["void_form"] is None
    assert Receipt.objects.get(pk=receipt.pk).snapshot["amount"] == "22950.00"  # the receipt stays as issued
    # a second void is refused with the service's message
    response = client.post(url("void", receipt.payment_id), {"reason": "otra vez"})
    assert response.status_code == 200 and "Ese pago ya fue anulado." in text(response)
    # the statement owes the money again
    assert client.get(url("statement", district_1["P2"].pk)).context["statement"].total_due > Decimal("22950.00")


# ---------------------------------------------------------------------------------------------
# Statements
# ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_statement_as_of_a_date_for_the_landowner(client, district_1, users):
    receipt = pay(users, district_1["P4"], "1000.00")
    client.force_login(users["landowner"])
    response = client.get(url("statement", district_1["P4"].pk))
    assert response.context["statement"].as_of == TODAY and response.context["statement"].total_due == Decimal("6000.21")
    body = text(response)
    assert receipt.display_number in body and url("receipt", receipt.pk) in body
    assert f'href="{url("counter-parcel", district_1["P4"].pk)}"' not in body  # no collecting for landowners
    certificates = reverse("collections:certificates", args=[district_1["P4"].pk])
    assert certificates not in body  # nor certifying
    for role, shown in [("collector", True), ("supervisor", True), ("hacienda", True), ("auditor", False)]:
        client.force_login(users[role])
        page = client.get(url("statement", district_1["P4"].pk))
        assert page.status_code == 200 and (f'href="{certificates}"' in text(page)) is shown, role
    client.force_login(users["landowner"])
    # before the last day to pay nothing is late; the payment of 10-15 is not counted yet
    response = client.get(url("statement", district_1["P4"].pk), {"as_of": "2026-08-31"})
    statement = response.context["statement"]
    assert statement.as_of == date(2026, 8, 31) and statement.total_due == Decimal("6930.90")
    assert statement.lines[0].surcharge == Decimal("0.00") and receipt.display_number not in text(response)
    # one day later the July half is delinquent: period 1 begins (¶12)
    statement = client.get(url("statement", district_1["P4"].pk), {"as_of": "2026-09-01"}).context["statement"]
    assert statement.lines[0].surcharge == Decimal("34.65") and statement.lines[0].status == "late"
    # a malformed date shows its error and today's statement
    response = client.get(url("statement", district_1["P4"].pk), {"as_of": "2026-02-31"})
    assert response.status_code == 200 and response.context["form"].errors
    assert response.context["statement"].as_of == TODAY


# ---------------------------------------------------------------------------------------------
# The day report
# ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_day_report_totals_and_over_short(client, district_1, users, django_assert_max_num_queries):
    pay(users, district_1["P1"], "100.00")
    pay(users, district_1["P1"], "250.50", user="supervisor")
    pay(users, district_1["P2"], "1000.00", method="check", reference="CHK-1")
    pay(users, district_1["P3"], "40.00", method="card", reference="")
    bounced = pay(users, district_1["P4"], "500.00", method="check", reference="CHK-2")
    pay(users, district_1["P5"], "999.99", on=date(2026, 10, 14))  # another day
    counter.payment_void(acting_user=users["supervisor"], payment=bounced.payment, reason="Cheque sin fondos")

    client.force_login(users["collector"])
    with django_assert_max_num_queries(14):  # 13 (the day's totals, refunds and a page of receipts), and the second-factor device
        response = client.get(url("day-report"), {"counted_cash": "$350.00", "counted_checks": "990.00"})
    assert response.status_code == 200
    report = response.context["report"]
    assert report.day == TODAY and len(report.payments) == 5
    assert {row.method: (row.count, row.amount) for row in report.by_method} == {
        "cash": (2, Decimal("350.50")), "check": (1, Decimal("1000.00")), "card": (1, Decimal("40.00")),
        "transfer": (0, Decimal("0.00")),
    }
    assert (report.total, report.voided_count, report.voided_total) == (Decimal("1390.50"), 1, Decimal("500.00"))
    rows = {row.label: (row.expected, row.counted, row.difference) for row in response.context["over_short"]}
    assert rows == {"Efectivo": (Decimal("350.50"), Decimal("350.00"), Decimal("-0.50")),
                    "Cheque": (Decimal("1000.00"), Decimal("990.00"), Decimal("-10.00"))}
    body = text(response)
    for shown in ("$1,390.50", "-$0.50", "-$10.00", "Faltante", "ANULADO", "LAJ-2026-2027-000005"):
        assert shown in body, shown
    assert Payment.objects.count() == 6  # the report writes nothing

    # another day, and a typo in the counted cash leaves the rest of the report working
    response = client.get(url("day-report"), {"day": "2026-10-14", "counted_cash": "mucho"})
    assert response.context["report"].total == Decimal("999.99") and response.context["form"].errors
    assert response.context["over_short"] == []


@pytest.mark.django_db
def test_day_report_query_budget_does_not_grow_with_receipts(client, district_1, users, django_assert_max_num_queries):
    for n in range(15):
        pay(users, district_1["P1"], f"{n + 1}.00", method="check" if n % 2 else "cash", reference=f"C{n}")
    client.force_login(users["supervisor"])
    with django_assert_max_num_queries(14):  # 13 (the day's totals, refunds and a page of receipts), and the second-factor device
        response = client.get(url("day-report"), {"counted_cash": "64.00", "counted_checks": "56.00"})
    assert response.context["report"].count == 15
    assert [row.difference for row in response.context["over_short"]] == [Decimal("0.00"), Decimal("0.00")]
    assert "Cuadra" in text(response)



@pytest.mark.django_db
def test_the_day_report_lists_a_page_of_receipts_with_the_whole_days_totals(client, district_1, users,
                                                                            django_assert_max_num_queries):
    """Issue 20: a busy day is listed fifty receipts a page, in number order; the totals by method,
    the over/short and the close are the whole day's, read in the same queries on every page."""
    from billing.web.counter import DAY_REPORT_PAGE

    for n in range(DAY_REPORT_PAGE + 2):
        pay(users, district_1["P1"], "1.00", method="check" if n % 2 else "cash", reference=f"C{n}")
    client.force_login(users["supervisor"])
    with django_assert_max_num_queries(14):  # as with 15 receipts (above)
        first = client.get(url("day-report"), {"counted_cash": "26.00", "counted_checks": "26.00"})
    with django_assert_max_num_queries(14):
        second = client.get(url("day-report"), {"counted_cash": "26.00", "counted_checks": "26.00", "page": "2"})
    for response in (first, second):
        assert response.context["report"].count == DAY_REPORT_PAGE + 2 and response.context["report"].total == Decimal("52.00")
        assert [row.difference for row in response.context["over_short"]] == [Decimal("0.00"), Decimal("0.00")]
    numbers = [p.receipt.number for p in first.context["page"]] + [p.receipt.number for p in second.context["page"]]
    assert len(first.context["page"]) == DAY_REPORT_PAGE and numbers == sorted(numbers) and len(set(numbers)) == 52
    assert "Recibos 51 a 52 de 52; los totales de arriba son los del día entero." in text(second)
    assert "Cuadra" in text(second)

@pytest.mark.django_db
def test_the_landowner_home_says_what_is_owed_by_when_and_where_to_pay(client, district_1, users):
    """Issue 5: plain Spanish on the landowner's first page: owed today, the next payment and its
    last day (late: with surcharge), what happens after the last day, where to pay."""
    pay(users, district_1["P4"], "6930.90")  # P4's July half paid in full (without its surcharge)
    client.force_login(users["landowner"])
    page = text(client.get(reverse("home")))
    # P1 owes today its July half, 9,180.00 (100 ac × 183.60 $/ac / 2), two ½% periods late:
    # 9,180.00 × 0.005 × 2 = 91.80 surcharge, 9,271.80 in all (the January half is not due yet)
    assert "9,271.80" in page  # owed today, with the ¶12 surcharge
    assert "$9,271.80: atrasado (el último día para pagar fue el 31 de agosto de 2026), con recargo (¶12)" in page
    assert "$69.31: atrasado (el último día para pagar fue el 31 de agosto de 2026)" in page  # what P4 still owes: its surcharge
    assert "60 días después de vencer" in page and "½%" in page and "Oficina del Colector" in page and "¶14" in page
