"""Issue 18 point 13: a seizure step and a roll correction are reviewed before they are recorded.

The correction's review reads ``roll_correction_preview``: the same rules as the writer, on the
stored records with the new entries added in memory, nothing written. On worked example 1 (P1:
halves 9,180.00; P4: halves 6,930.90; no credits) every figure it shows must be the one the
correction then posts: the halves before and after, the give-back (¶9, ¶12) and the *crédito
aplicado* (¶13), the credit left and what the account owes today. The seizure step's review
(¶14) shows the debt the notice freezes and its term, and the certificate is offered only from the
day after the notice's 30-day term, the date the page shows."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from billing import accounts
from billing.models import CorrectionCharge, CreditApplication, GiveBack, LedgerEntry, SeizureCase, SeizureStep
from billing.services import collection, corrections, counter
from levy.models import RollCorrection, RollLine
from parcels import review
from parcels.models import Parcel
from tests.clock import move_clock_to

D = Decimal
PR = ZoneInfo("America/Puerto_Rico")


def at(monkeypatch, day: date, hour: int = 10) -> None:
    move_clock_to(monkeypatch, datetime(day.year, day.month, day.day, hour, tzinfo=PR))


def line(code: str) -> RollLine:
    return RollLine.objects.get(parcel__parcel_id=code, levy__status="final")


def posted(preview: corrections.CorrectionPreview, correction: RollCorrection) -> dict:
    """The rows the correction posted, named by the preview's keys (a new charge by its half)."""
    new = {f"C{link.charge_id:012d}": f"C{10**12 - 3 + link.number:012d}"  # the preview's key of a new half
           for link in CorrectionCharge.objects.filter(correction=correction)}

    def key(charge_id: int) -> str:
        found = f"C{charge_id:012d}"
        return new.get(found, found)

    return {
        "give_backs": sorted((key(b.charge_id), b.surcharge.amount, b.principal.amount)
                             for b in GiveBack.objects.filter(correction=correction)),
        "credit_applied": sorted((key(a.charge_id), a.surcharge.amount, a.principal.amount)
                                 for a in CreditApplication.objects.filter(correction=correction)),
    }


def shown(preview: corrections.CorrectionPreview) -> dict:
    return {
        "give_backs": sorted((r.key, r.surcharge, r.principal) for r in preview.give_backs),
        "credit_applied": sorted((r.key, r.surcharge, r.principal) for r in preview.credit_applied),
    }


@pytest.mark.django_db
def test_a_lowering_of_a_late_paid_half_previews_the_give_back_and_credito_aplicado_it_posts(district_1, staff, monkeypatch):
    """P4's July half (6,930.90) paid on 2026-09-15 with its ½ % surcharge (34.65, ¶12) and 34.66
    ahead to January. On 2026-11-16 its O&M charge falls 1,000.00: each half 500.00 less. July
    gives back 500.00 of principal and the surcharge on it (34.65 − ½ % × 6,430.90 = 34.65 −
    32.15 = 2.50), and the 502.50 goes by crédito aplicado to January (¶13)."""
    p4 = Parcel.objects.get(parcel_id="P4")
    at(monkeypatch, date(2026, 9, 15))
    counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=D("7000.21"))
    at(monkeypatch, date(2026, 11, 16))
    entries = LedgerEntry.objects.count()
    preview = corrections.roll_correction_preview(acting_user=staff["hacienda"], roll_line=line("P4"),
                                                  om_charge_delta=D("-1000.00"), reason="Mensura")
    assert LedgerEntry.objects.count() == entries and not RollCorrection.objects.exists()  # nothing written
    assert [(h.number, h.old, h.new) for h in preview.plan.halves] == [(1, D("6930.90"), D("6430.90")),
                                                                      (2, D("6930.90"), D("6430.90"))]
    assert [(r.surcharge, r.principal) for r in preview.give_backs] == [(D("2.50"), D("500.00"))]
    assert sum((r.amount for r in preview.credit_applied), D(0)) == D("502.50")
    assert preview.number == 1 and preview.owed_before == D("0.00")

    correction = corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line("P4"),
                                                    om_charge_delta=D("-1000.00"), reason="Mensura")
    assert shown(preview) == posted(preview, correction)
    after = accounts.account_state(parcel=p4, as_of=date(2026, 11, 16), known_by=None).state
    assert (after.credit_balance, after.total_due) == (preview.credit_after, preview.owed_after)


@pytest.mark.django_db
@pytest.mark.parametrize("change", [
    {"om_charge_delta": D("250.00")},  # a rise: two new correction charges, nothing given back
    {"om_charge_delta": D("-18360.00")},  # P1 to zero: both halves fall to 0.00
    {"om_charge_delta": D("0"), "credit_percent": D("25")},  # a new sec. 372 percentage moves the credit (¶7)
])
def test_the_preview_equals_what_the_correction_posts(district_1, staff, monkeypatch, change):
    """P1 paid its July half on time (9,180.00) and 100.00 ahead; corrections of several shapes."""
    p1 = Parcel.objects.get(parcel_id="P1")
    at(monkeypatch, date(2026, 7, 10))
    counter.payment_record(acting_user=staff["collector"], parcel=p1, amount=D("9280.00"))
    at(monkeypatch, date(2026, 10, 5))
    preview = corrections.roll_correction_preview(acting_user=staff["hacienda"], roll_line=line("P1"), reason="Caso", **change)
    correction = corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line("P1"), reason="Caso", **change)
    assert shown(preview) == posted(preview, correction)
    assert sorted(r.principal for r in preview.rises) == sorted(
        link.charge.principal.amount for link in CorrectionCharge.objects.filter(correction=correction))
    after = accounts.account_state(parcel=p1, as_of=date(2026, 10, 5), known_by=None).state
    assert (after.credit_balance, after.total_due) == (preview.credit_after, preview.owed_after)


@pytest.mark.django_db
def test_the_correction_page_records_only_from_its_review(client, district_1, staff, monkeypatch):
    p4 = Parcel.objects.get(parcel_id="P4")
    at(monkeypatch, date(2026, 9, 15))
    counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=D("7000.21"))
    at(monkeypatch, date(2026, 11, 16))
    url = reverse("levy:corrections", args=["2026-2027"])
    client.force_login(staff["hacienda"])
    form = {"parcel_id": "p4", "om_charge_delta": "-1000.00", "credit_delta": "0", "reason": "Mensura", "due_date": "",
            "credit_percent": ""}
    page = client.post(url, form)
    assert page.status_code == 200 and not RollCorrection.objects.exists()
    html = page.content.decode()
    assert "Revisar antes de registrar la corrección n.º 1" in html
    for figure in ("$6,930.90", "$6,430.90", "-$500.00", "$2.50", "$500.00", "Crédito aplicado"):
        assert figure in html, figure
    fingerprint = page.context["fingerprint"]
    # another officer corrected the line meanwhile: the confirmation is refused and the page shown again
    corrections.roll_correction_create(acting_user=staff["hacienda"], roll_line=line("P4"), om_charge_delta=D("10.00"),
                                       reason="Otra")
    again = client.post(url, {**form, review.FIELD: fingerprint})
    assert again.status_code == 409 and RollCorrection.objects.count() == 1
    assert "no se registró nada" in again.content.decode() and "corrección n.º 2" in again.content.decode()
    done = client.post(url, {**form, review.FIELD: again.context["fingerprint"]})
    assert done.status_code == 302 and RollCorrection.objects.count() == 2


@pytest.mark.django_db
def test_the_seizure_step_is_issued_only_from_its_review_and_the_certificate_waits_for_its_day(client, district_1, staff,
                                                                                              monkeypatch):
    p4 = Parcel.objects.get(parcel_id="P4")
    url = reverse("collections:seizure", args=[p4.pk])
    client.force_login(staff["hacienda"])
    at(monkeypatch, date(2026, 9, 10))
    page = client.post(url, {"kind": "notice"})
    assert page.status_code == 200 and not SeizureStep.objects.exists() and not SeizureCase.objects.exists()
    html = page.content.decode()
    assert "Esto no se puede deshacer." in html and "30 días, hasta el 10 de octubre de 2026" in html
    assert "$6,965.55" in html  # July 6,930.90 + ½ % of it (¶12), owed on 10 September
    assert client.post(url, {"kind": "notice", review.FIELD: "0" * 64}).status_code == 409
    assert client.post(url, {"kind": "notice", review.FIELD: page.context["fingerprint"]}).status_code == 302
    notice = SeizureStep.objects.get(kind="notice")
    assert notice.term_ends == date(2026, 10, 10) and notice.debt["total_due"] == "6965.55"

    at(monkeypatch, date(2026, 10, 10))  # the term's last day: the certificate is not offered, its day is shown
    client.force_login(staff["hacienda"])  # a month later: a new session
    following = collection.seizure_step_next(parcel=p4)
    assert (following.kind, following.available_on, following.available(date(2026, 10, 10))) == (
        "certificate", date(2026, 10, 11), False)
    html = client.get(url).content.decode()
    assert "disponible desde el 11 de octubre de 2026" in html and 'name="kind"' not in html
    refused = client.post(url, {"kind": "certificate"})
    assert refused.status_code == 200 and "vence el 10/10/2026" in refused.content.decode()

    at(monkeypatch, date(2026, 10, 11))
    client.force_login(staff["hacienda"])
    html = client.get(url).content.decode()
    assert 'name="kind" value="certificate"' in html and "disponible desde" not in html
    review_page = client.post(url, {"kind": "certificate"})
    assert review_page.status_code == 200 and notice.number in review_page.content.decode()
    assert client.post(url, {"kind": "certificate", review.FIELD: review_page.context["fingerprint"]}).status_code == 302
    assert SeizureStep.objects.filter(kind="certificate").count() == 1


@pytest.mark.django_db
def test_the_review_pages_and_the_owners_alert_are_valid_html(client, district_1, staff, monkeypatch, tmp_path, make_user,
                                                             owner_a):
    """The Nu HTML Checker (tests/test_html_valid.py) on the pages of point 2 and 13, both languages:
    they are POST answers and pages of a parcel under seizure, not in the GET sweep."""
    from tests.test_html_valid import need_java, nu_errors

    need_java()
    p4 = Parcel.objects.get(parcel_id="P4")
    landowner = make_user("dueno_a", "landowner", owner=owner_a)
    at(monkeypatch, date(2026, 9, 15))
    counter.payment_record(acting_user=staff["collector"], parcel=p4, amount=D("7000.21"))
    at(monkeypatch, date(2027, 1, 20))  # January's half is late now: a notice can be issued
    collection.seizure_step_issue(acting_user=staff["hacienda"], parcel=p4, kind="notice")
    pages = {}
    for language in ("es-pr", "en"):
        client.cookies["django_language"] = language
        client.force_login(staff["hacienda"])
        pages[f"{language}-seizure"] = client.get(reverse("collections:seizure", args=[p4.pk]))
        pages[f"{language}-notice-review"] = client.post(reverse("collections:seizure", args=[Parcel.objects.get(parcel_id="P2").pk]),
                                                         {"kind": "notice"})
        pages[f"{language}-correction-review"] = client.post(reverse("levy:corrections", args=["2026-2027"]), {
            "parcel_id": "P4", "om_charge_delta": "-1000.00", "credit_delta": "0", "reason": "Mensura"})
        client.force_login(landowner)
        pages[f"{language}-home"] = client.get(reverse("home"))
        pages[f"{language}-statement"] = client.get(reverse("billing:statement", args=[p4.pk]))
    for name, response in pages.items():
        assert response.status_code == 200, (name, response.status_code)
        (tmp_path / f"{name}.html").write_text(response.content.decode(), encoding="utf-8")
    assert "seizure-alert" in pages["es-pr-home"].content.decode() and "seizure-document" in pages["en-statement"].content.decode()
    errors = nu_errors(tmp_path)
    assert not errors, "\n".join(errors)


@pytest.mark.django_db
def test_the_owner_is_told_when_the_term_ran_out_and_only_he_opens_the_notice(client, district_1, staff, monkeypatch, make_user,
                                                                             owner_a, owner_b):
    """¶14: P4's notice of 10 September 2026 (term to 10 October). On 20 October the owner's home
    says the term ran out and what stops the procedure: paying what is owed today (July 6,930.90
    + two ½ % periods begun, 1 September and 1 October, ¶12: 69.31 → 7,000.21), beside the
    6,965.55 the notice claimed on 10 September (one period begun)."""
    p4 = Parcel.objects.get(parcel_id="P4")
    at(monkeypatch, date(2026, 9, 10))
    notice = collection.seizure_step_issue(acting_user=staff["hacienda"], parcel=p4, kind="notice")
    at(monkeypatch, date(2026, 10, 20))
    client.force_login(make_user("dueno_a", "landowner", owner=owner_a))
    html = client.get(reverse("home")).content.decode()
    assert "El plazo para pagar venció el 10 de octubre de 2026." in html
    assert "hoy, $7,000.21" in html and f"El documento {notice.number} reclama $6,965.55" in html
    assert html.index("seizure-alert") < html.index("summary-box")  # first, before the amounts
    pdf = client.get(reverse("portal:seizure-pdf", args=[notice.pk]))
    assert pdf.status_code == 200 and pdf.content == bytes(notice.pdf)
    client.force_login(make_user("dueno_b", "landowner", owner=owner_b))
    assert client.get(reverse("portal:seizure-pdf", args=[notice.pk])).status_code == 404
    assert "seizure-alert" not in client.get(reverse("home")).content.decode()
