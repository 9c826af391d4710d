"""Who may open every URL of the app: an authorization matrix over the URL resolver.

Each named URL has one entry in ``MATRIX``: how to build its arguments from the district in
``conftest.py`` and what each principal gets on a GET (anonymous, the six roles, and a signed-in
user in no role). The set of names in the matrix must equal the set the resolver knows, so a new
URL without an entry fails ``test_every_url_of_the_app_is_in_the_matrix``.

The design read from the views (``role_required`` and ``parcels/billing.access``): anonymous
visitors go to the login page except on the public pages; a signed-in user without the role gets
403; a landowner reaches only their own parcels, statements, receipts, bills and certificates and
gets 404 for anyone else's. For views that take a POST, every principal without the role is
refused (403, or the login page) and nothing in the database changes, while the same POST by a
role that may send it does write (so the refusal is not vacuous).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from billing import accounts
from parcels import review
from parcels.roles import ROLES

from .conftest import (
    ANONYMOUS,
    DRAFT_YEAR,
    NOROLE,
    OPEN_YEAR,
    PRINCIPALS,
    YEAR,
    World,
    assert_security_headers,
    changed_tables,
    fingerprint,
    is_login_redirect,
    new_idempotency_key,
    sign_in,
    valid_import_csv,
)

LOGIN = "login"  # expected outcome: a redirect to the login page with ?next=
STAFF = frozenset({"authority", "hacienda", "collector", "supervisor", "auditor"})
MONEY_READERS = frozenset({"collector", "supervisor", "hacienda", "auditor"})  # billing.access.RECEIPT_STAFF
COUNTER = frozenset({"collector", "supervisor"})
BANK_READERS = frozenset({"supervisor", "hacienda", "auditor"})  # billing.web.bank.READERS (issue 19)

# URLs left out of the matrix, each with its reason (checked by their own tests below).
SKIPPED_NAMESPACES = {
    "admin": "Django's admin site: it has its own gate (is_staff) and no role of the app is staff; "
             "test_admin_site_refuses_every_role checks that gate for every principal.",
}

Expected = dict[str, Any]  # principal -> status code or LOGIN


def by_role(allowed: frozenset[str] | set[str], *, ok: int = 200, norole: int = 403, anonymous: Any = LOGIN) -> Expected:
    """``role_required``: anonymous → login, the allowed roles → ``ok``, anyone else → 403."""
    expected: Expected = {ANONYMOUS: anonymous, NOROLE: norole}
    expected.update({role: ok if role in allowed else 403 for role in ROLES})
    return expected


def public(status: int = 200, *, signed_in: int | None = None) -> Expected:
    return {principal: status if principal == ANONYMOUS or signed_in is None else signed_in for principal in PRINCIPALS}


def post_only(allowed: frozenset[str] | set[str], *, role_checked_first: bool = False) -> Expected:
    """A GET to a POST-only view: 405 (``require_POST`` outermost), or with ``role_required``
    outermost the usual refusals and 405 only for the roles that may POST."""
    if role_checked_first:
        return by_role(allowed, ok=405)
    return dict.fromkeys(PRINCIPALS, 405)


@dataclass(frozen=True)
class Route:
    get: Expected
    targets: Callable[[World], list[dict[str, Any]]] = lambda w: [{}]  # kwargs of objects the principal may see
    others: Callable[[World], list[dict[str, Any]]] | None = None  # another owner's objects: landowner → 404
    post_roles: frozenset[str] | None = None  # roles that may POST; None: not a form of a role
    post_data: Callable[[World], dict[str, Any]] = field(default=lambda w: {})
    query: str = ""


def pk(obj: Any) -> list[dict[str, Any]]:
    return [{"pk": obj.pk}]


def today() -> str:
    return timezone.localdate().isoformat()


def counter_payment(w: World) -> dict[str, Any]:

    due = accounts.statement(parcel=w.parcels["A1"], as_of=timezone.localdate()).total_due
    return {"amount": "10.00", "method": "cash", "reference": "", "idempotency_key": new_idempotency_key(),
            "expected_total_due": f"{due:.2f}"}


def current_estimate_pk(w: World) -> dict[str, Any]:
    from levy.models import FiscalYear
    from levy.services import current_estimate
    from levy.views import certify_fingerprint

    estimate = current_estimate(FiscalYear.objects.get(label=OPEN_YEAR))
    return {"estimate": estimate.pk, review.FIELD: certify_fingerprint(estimate)}  # as its review page sends it


def reviewed_finalize(w: World) -> dict[str, Any]:
    """The finalize confirmation as the review page sends it (parcels.review)."""
    from billing.web.roll import finalize_fingerprint, finalize_preview
    from levy.models import FiscalYear
    from levy.services import draft_levy

    levy = draft_levy(FiscalYear.objects.get(label=DRAFT_YEAR))
    return {review.FIELD: finalize_fingerprint(finalize_preview(levy, on=timezone.localdate()))}


def reviewed_void(w: World) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from billing.services.voids import void_preview
    from billing.web.counter import VOID_ACT, void_figures

    payment, on = w.receipts["A"].payment, timezone.localdate()
    supervisor = get_user_model().objects.filter(groups__name="supervisor").first()
    entries = void_preview(acting_user=supervisor, payment=payment, reason="Cheque devuelto", voided_on=on).entries
    figures = void_figures(payment=payment, reason="Cheque devuelto", on=on, entries=entries)
    return {"reason": "Cheque devuelto", review.FIELD: review.fingerprint(VOID_ACT, figures)}


def _hacienda_user():  # noqa: ANN202
    from django.contrib.auth import get_user_model

    return get_user_model().objects.filter(groups__name="hacienda").first()


def reviewed_correction(w: World) -> dict[str, Any]:
    """The correction's confirmation as its review page sends it (issue 18 point 13)."""
    from billing.services.corrections import roll_correction_preview
    from billing.web.roll import CORRECTION_ACT
    from levy.models import RollLine

    due = timezone.localdate() + timedelta(days=30)
    data = {"parcel_id": "A1", "om_charge_delta": "10.00", "credit_delta": "0.00", "reason": "Área corregida",
            "due_date": due.isoformat()}
    line = RollLine.objects.get(parcel_code="A1", levy__fiscal_year__label=YEAR, levy__status="final")
    preview = roll_correction_preview(acting_user=_hacienda_user(), roll_line=line, om_charge_delta=Decimal("10.00"),
                                      credit_delta=Decimal("0.00"), reason="Área corregida", due_date=due,
                                      made_on=timezone.localdate())
    return {**data, review.FIELD: review.fingerprint(CORRECTION_ACT, preview.figures())}


def reviewed_seizure(w: World) -> dict[str, Any]:
    """The notice's confirmation as its review page sends it (issue 18 point 13)."""
    from billing.services.collection import seizure_step_preview
    from billing.web.hacienda import SEIZURE_ACT

    preview = seizure_step_preview(acting_user=_hacienda_user(), parcel=w.parcels["F1"], kind="notice", on=timezone.localdate())
    return {"kind": "notice", review.FIELD: review.fingerprint(SEIZURE_ACT, preview.figures())}


def reviewed_day_close(w: World) -> dict[str, Any]:
    from decimal import Decimal

    from billing import selectors
    from billing.models import Office
    from billing.web.counter import DAY_CLOSE_ACT, day_close_figures

    data = {"office": "LAJ", "day": today(), "counted_cash": "0.00", "counted_checks": "0.00", "explanation": "Prueba de permisos"}
    report = selectors.day_report(office=Office.objects.get(code="LAJ"), day=timezone.localdate())
    figures = day_close_figures(report=report, counted_cash=Decimal("0.00"), counted_checks=Decimal("0.00"),
                                explanation=data["explanation"])
    return {**data, review.FIELD: review.fingerprint(DAY_CLOSE_ACT, figures)}


def reviewed_refund(w: World) -> dict[str, Any]:
    """Issue 18: a refund is recorded from its review page's POST (its fingerprint)."""
    from decimal import Decimal

    from billing import accounts
    from billing.models import Office
    from billing.services.counter import refund_held
    from billing.web.counter import REFUND_ACT, refund_figures

    data = {"amount": Decimal("20.00"), "method": "cash", "reason": "Pagó de más"}
    parcel, on = w.parcels["A2"], timezone.localdate()
    credit = accounts.statement(parcel=parcel, as_of=on).credit_balance - refund_held(parcel=parcel)
    figures = refund_figures(parcel=parcel, data=data, on=on, office=Office.objects.get(code="LAJ"), credit=credit)
    return {**data, "amount": "20.00", review.FIELD: review.fingerprint(REFUND_ACT, figures)}


def pending_refund_request(w: World) -> list[dict[str, Any]]:
    """Issue 19: a refund request of A2's credit asked by a second supervisor (made once, before
    the crawl's fingerprint), which the world's supervisor may approve."""
    from decimal import Decimal

    from billing.models import RefundRequest
    from billing.services.counter import refund_request
    from tests.factories import UserFactory

    found = RefundRequest.objects.filter(parcel=w.parcels["A2"], status="requested").first()
    if found is None:
        asker = UserFactory(username="sec_supervisor2", role="supervisor")
        found = refund_request(acting_user=asker, parcel=w.parcels["A2"], amount=Decimal("5.00"), reason="Pagó de más",
                               method="cash", office_code="LAJ")
    return pk(found)


PARCEL_FORM = {"area_unit": "acre", "gravity_area": "99", "pumped_area": "0", "inclusion": "permanent",
               "water_since": "2000-01-01", "credit_percent": "0"}
AUTHORITY = frozenset({"authority"})
HACIENDA = frozenset({"hacienda"})
SUPERVISOR = frozenset({"supervisor"})
CERTIFIERS = frozenset({"hacienda", "collector", "supervisor"})
OFFICE_EDITORS = frozenset({"hacienda", "supervisor"})  # billing.services.offices
ON_DEMAND = frozenset({"landowner", "collector", "supervisor", "hacienda"})
LANDOWNER_POSTS = {"portal:installment-bill", "portal:statement-pdf",  # their own parcels' documents only
                   "portal:delivery"}  # issue 19: their own owner record's delivery choice


def first_installment(w: World, code: str, number: int = 1) -> int:
    """An installment of ``code`` with no bill yet (the world billed A1's two and B1's first)."""
    from billing.models import Charge

    return Charge.objects.get(parcel=w.parcels[code], fiscal_year__label=YEAR, number=number, kind="installment").pk

MATRIX: dict[str, Route] = {
    # --- the project's own pages ------------------------------------------------------------------
    "home": Route(get=by_role(STAFF | {"landowner"})),
    "login": Route(get=public(200, signed_in=302)),  # redirect_authenticated_user
    "logout": Route(get=public(405)),  # Django 5: POST only (and CSRF-protected)
    "password_reset": Route(get=public()),
    "password_reset_done": Route(get=public()),
    "password_reset_confirm": Route(get=public(), targets=lambda w: [{"uidb64": "MQ", "token": "bad-token"}]),
    "password_reset_complete": Route(get=public()),
    "set_language": Route(get=public(302)),  # Django's i18n view: a GET only redirects
    # the second factor (parcels.second_factor): the code page sends a session that owes nothing
    # on (302); staff are enrolled, so their enrolment page sends them to Mi cuenta
    "account:verify": Route(get={**dict.fromkeys(PRINCIPALS, 302), ANONYMOUS: LOGIN}),
    "account:enrol": Route(get={**by_role(frozenset({"landowner"})), **dict.fromkeys(STAFF, 302)}),
    "account:security": Route(get=by_role(STAFF | {"landowner"})),
    # the change of a first password (issue 17 §6): open only while one is due, else sent on (302)
    "account:password-change": Route(get={**dict.fromkeys(PRINCIPALS, 302), ANONYMOUS: LOGIN}),
    "account:recovery-codes": Route(get={**dict.fromkeys(PRINCIPALS, 405), ANONYMOUS: LOGIN}),
    "portal:claim": Route(get=public()),
    "portal:activate": Route(get=public(), targets=lambda w: [{"uidb64": "MQ", "token": "bad-token"}]),
    "portal:invite": Route(get=by_role(AUTHORITY), post_roles=AUTHORITY,
                           post_data=lambda w: {"owner_key": "OWN-B", "email": "nuevo@example.pr", "confirm": "1"}),
    # bills and numbered statements on demand (POST: they may issue a numbered document); the
    # landowner posts for their own parcels only (404 for another owner's: see below)
    "portal:installment-bill": Route(get=post_only(ON_DEMAND), targets=lambda w: [{"pk": first_installment(w, "A2")}],
                                     post_roles=ON_DEMAND),
    "portal:statement-pdf": Route(get=post_only(ON_DEMAND), targets=lambda w: pk(w.parcels["A1"]), post_roles=ON_DEMAND),
    # a seizure step's stored PDF (issue 18): money staff and the parcel's owner; the world's step is
    # B1's, so landowner A gets 404 (the owner's own is opened in tests/browser/test_issue18_seizure.py)
    "portal:seizure-pdf": Route(get={**by_role(MONEY_READERS), "landowner": 404}, targets=lambda w: pk(w.extra["seizure_step"])),
    # the public "¿cuánto debo?": a form for anyone; a POST with the right code shows the statement
    "owed:lookup": Route(get=public()),
    "verify:document": Route(get=public(), targets=lambda w: [
        {"code": w.receipts["A"].document.verification_code}, {"code": w.bill_docs["A"].verification_code},
        {"code": w.certificates["A"].document.verification_code}]),
    # the anchors' public key (issue 17 §5): published for anyone who checks the books
    "verify:public-key": Route(get=public()),
    # --- the parcel registry ------------------------------------------------------------------------
    "parcels:parcel-list": Route(get=by_role(STAFF)),
    "parcels:parcel-create": Route(get=by_role(AUTHORITY), post_roles=AUTHORITY, post_data=lambda w: {
        **PARCEL_FORM, "parcel_id": "SEC-NEW-2", "owner_key": "OWN-A"}),
    "parcels:parcel-detail": Route(get=by_role(STAFF | {"landowner"}, norole=404), targets=lambda w: pk(w.parcels["A1"]),
                                   others=lambda w: pk(w.parcels["B1"])),
    "parcels:parcel-edit": Route(get=by_role(AUTHORITY), targets=lambda w: pk(w.parcels["A1"]), post_roles=AUTHORITY,
                                 post_data=lambda w: PARCEL_FORM),
    "parcels:parcel-transfer": Route(get=by_role(AUTHORITY), targets=lambda w: pk(w.parcels["A1"]), post_roles=AUTHORITY,
                                     post_data=lambda w: {"to_owner_key": "OWN-B", "effective_on": today(),
                                                          "deed_reference": "Escritura 12"}),
    "parcels:owner-list": Route(get=by_role(STAFF)),
    "parcels:owner-create": Route(get=by_role(AUTHORITY), post_roles=AUTHORITY,
                                  post_data=lambda w: {"name": "Nuevo Dueño", "kind": "private"}),
    "parcels:owner-detail": Route(get=by_role(STAFF), targets=lambda w: pk(w.owners["A"])),
    "parcels:owner-edit": Route(get=by_role(AUTHORITY), targets=lambda w: pk(w.owners["A"]), post_roles=AUTHORITY,
                                post_data=lambda w: {"name": "Otro Nombre", "kind": "private"}),
    "parcels:import-upload": Route(get=by_role(AUTHORITY), post_roles=AUTHORITY,
                                   post_data=lambda w: {"file": valid_import_csv("SEC-NEW-3")}),
    "parcels:import-template": Route(get=by_role(AUTHORITY)),
    "parcels:import-detail": Route(get=by_role(AUTHORITY), targets=lambda w: pk(w.extra["upload"])),
    "parcels:import-confirm": Route(get=post_only(AUTHORITY), targets=lambda w: pk(w.extra["upload"]), post_roles=AUTHORITY),
    # a job's progress is for the user who started it (here a Hacienda officer), 404 for anyone else
    "parcels:job-status": Route(get={**dict.fromkeys(PRINCIPALS, 404), ANONYMOUS: LOGIN, "hacienda": 200},
                                targets=lambda w: pk(w.extra["compute_job"])),
    "parcels:audit": Route(get=by_role(STAFF)),
    "books:checks": Route(get=by_role(STAFF)),  # every staff role reads the recorded checks of the books
    # issue 19: the registers for auditors (GET only: reading a register writes nothing)
    "registers:register": Route(get=by_role({"auditor", "hacienda", "supervisor"})),
    # --- the levy -------------------------------------------------------------------------------------
    "levy:year-list": Route(get=by_role({"authority", "hacienda", "auditor"})),
    "levy:year-start": Route(get=by_role(AUTHORITY, ok=302)),
    "levy:parameters": Route(get=by_role(STAFF)),
    # replacing certified estimates (with the reason they need); see the report on uncertified ones
    "levy:estimates": Route(get=by_role({"authority", "hacienda", "auditor"}), targets=lambda w: [{"year": DRAFT_YEAR}],
                            post_roles=AUTHORITY, post_data=lambda w: {
                                "om_estimate": "200,000.00", "reserve": "1,000.00", "misc_income": "0.00", "reason": "Revisión"}),
    "levy:estimate-certify": Route(get=post_only(AUTHORITY), targets=lambda w: [{"year": OPEN_YEAR}], post_roles=AUTHORITY,
                                   post_data=current_estimate_pk),
    "levy:worksheet": Route(get=by_role({"hacienda", "auditor"}), targets=lambda w: [{"year": YEAR}, {"year": DRAFT_YEAR}]),
    "levy:compute": Route(get=post_only(HACIENDA), targets=lambda w: [{"year": DRAFT_YEAR}], post_roles=HACIENDA),
    "levy:compute-progress": Route(get=by_role({"hacienda", "auditor"}),
                                   targets=lambda w: [{"year": YEAR, "pk": w.extra["compute_job"].pk}]),
    "levy:finalize": Route(get=post_only(HACIENDA), targets=lambda w: [{"year": DRAFT_YEAR}], post_roles=HACIENDA,
                           post_data=reviewed_finalize),
    "levy:roll": Route(get=by_role({"hacienda", "auditor"}), targets=lambda w: [{"year": YEAR}]),
    "levy:whatif": Route(get=by_role({"hacienda", "authority"}), targets=lambda w: [{"year": YEAR}]),
    "levy:corrections": Route(get=by_role({"hacienda", "auditor"}), targets=lambda w: [{"year": YEAR}], post_roles=HACIENDA,
                              post_data=reviewed_correction),
    # --- the Collector's office ---------------------------------------------------------------------
    "billing:counter": Route(get=by_role(COUNTER), query="?q=A1"),
    "billing:counter-parcel": Route(get=by_role(COUNTER), targets=lambda w: pk(w.parcels["A1"]), post_roles=COUNTER,
                                    post_data=counter_payment),
    "billing:statement": Route(get=by_role(MONEY_READERS | {"landowner"}), targets=lambda w: pk(w.parcels["A1"]),
                               others=lambda w: pk(w.parcels["B1"])),
    # a parcel's ledger with its running balance (issue 17 §2): office staff who read money
    "billing:ledger": Route(get=by_role(MONEY_READERS), targets=lambda w: pk(w.parcels["A1"])),
    "billing:receipt": Route(get=by_role(MONEY_READERS | {"landowner"}), targets=lambda w: pk(w.receipts["A"]),
                             others=lambda w: pk(w.receipts["B"])),
    "billing:receipt-pdf": Route(get=by_role(MONEY_READERS | {"landowner"}), targets=lambda w: pk(w.receipts["A"]),
                                 others=lambda w: pk(w.receipts["B"])),
    "billing:document-pdf": Route(get=by_role(MONEY_READERS | {"landowner"}),
                                  targets=lambda w: pk(w.bill_docs["A"]) + pk(w.certificates["A"].document),
                                  others=lambda w: pk(w.bill_docs["B"]) + pk(w.certificates["B"].document)),
    "billing:void": Route(get=post_only(SUPERVISOR), targets=lambda w: pk(w.receipts["A"].payment), post_roles=SUPERVISOR,
                          post_data=reviewed_void),
    "billing:day-report": Route(get=by_role(COUNTER)),
    # the world's receipts of today do not match zero
    "billing:day-close": Route(get=post_only(SUPERVISOR), post_roles=SUPERVISOR, post_data=reviewed_day_close),
    # POST only and writes no row (it renews the session): its refusals are in tests/billing/test_counter.py
    "billing:session-extend": Route(get=post_only(COUNTER)),
    "billing:refund": Route(get=post_only(SUPERVISOR), targets=lambda w: pk(w.parcels["A2"]), post_roles=SUPERVISOR,
                            post_data=reviewed_refund),
    # issue 19: the pending refund requests and the second supervisor's decision
    "billing:refund-requests": Route(get=by_role(SUPERVISOR)),
    "billing:refund-decide": Route(get=post_only(SUPERVISOR), targets=pending_refund_request, post_roles=SUPERVISOR,
                                   post_data=lambda w: {"action": "approve"}),
    # --- Hacienda's collections -----------------------------------------------------------------------
    "collections:delinquent": Route(get=by_role({"hacienda", "auditor"})),
    "collections:journals": Route(get=by_role({"hacienda", "auditor"})),  # issue 19: the fund journal
    "collections:seizure": Route(get=by_role(HACIENDA), targets=lambda w: pk(w.parcels["F1"]) + pk(w.parcels["B1"]),
                                 post_roles=HACIENDA, post_data=reviewed_seizure),
    "collections:seizure-pdf": Route(get=by_role(HACIENDA), targets=lambda w: pk(w.extra["seizure_step"])),
    "collections:certificates": Route(get=by_role(CERTIFIERS), targets=lambda w: pk(w.parcels["A1"]), post_roles=CERTIFIERS,
                                      post_data=lambda w: {"as_of": today()}),
    "collections:certificate-pdf": Route(get=by_role(CERTIFIERS), targets=lambda w: pk(w.certificates["A"])),
    "collections:dashboard": Route(get=by_role({"hacienda", "auditor", "authority"})),
    "collections:water": Route(get=by_role(AUTHORITY), post_roles=AUTHORITY, post_data=lambda w: {
        "parcel_id": "W1", "delivered_on": "2026-10-05", "acre_feet": "1.500"}),
    "collections:water-import": Route(get=post_only(AUTHORITY, role_checked_first=True), post_roles=AUTHORITY,
                                      post_data=lambda w: {"file": water_csv()}),
    "collections:water-bill": Route(get=post_only(AUTHORITY, role_checked_first=True), post_roles=AUTHORITY,
                                    post_data=lambda w: {"month": "2026-10"}),
    "collections:closures": Route(get=by_role(HACIENDA), post_roles=HACIENDA,
                                  post_data=lambda w: {"day": "2026-12-24", "reason": "Nochebuena"}),
    "collections:offices": Route(get=by_role(OFFICE_EDITORS)),
    "collections:office-edit": Route(get=by_role(OFFICE_EDITORS), targets=lambda w: [{"code": "LAJ"}], post_roles=OFFICE_EDITORS,
                                     post_data=lambda w: {"name": "Colecturía de Lajas", "address_line1": "Calle Principal 12",
                                                          "town": "Lajas", "zip_code": "00667", "phone": "(787) 555-0100",
                                                          "hours_es": "Lunes a viernes", "on_bills": "on"}),
    "collections:bank-files": Route(get=by_role(BANK_READERS)),
    "collections:bank-file-confirm": Route(get=post_only(frozenset({"supervisor"}), role_checked_first=True)),
    "collections:bank-file": Route(get=by_role(BANK_READERS), targets=lambda w: pk(w.extra["bank_file"])),
    "collections:bank-exceptions": Route(get=by_role(BANK_READERS)),
    "collections:bill-batches": Route(get=by_role(HACIENDA), post_roles=HACIENDA,
                                      post_data=lambda w: {"fiscal_year": YEAR, "number": "1", "parcel_prefix": "B"}),
    "collections:bill-batch": Route(get=by_role(HACIENDA), targets=lambda w: pk(w.extra["batch"])),
    "collections:bill-batch-part": Route(get=by_role(HACIENDA), targets=lambda w: [{"pk": w.extra["batch"].pk, "index": 0}]),
    # issue 19, mailing: a batch's mailing list; returned mail (the Authority's and Hacienda's clerks
    # record, the auditor reads); the landowner's delivery choice; the e-mail confirmation link (public,
    # a bad link is 400); staff confirming an owner's address (POST only)
    "collections:bill-batch-mailing": Route(get=by_role(HACIENDA), targets=lambda w: [{"pk": w.extra["batch"].pk, "what": "lista"}]),
    "collections:returned-mail": Route(get=by_role(AUTHORITY | HACIENDA | {"auditor"}), post_roles=AUTHORITY | HACIENDA,
                                       post_data=lambda w: {"reference": w.parcels["A1"].parcel_id}),
    "portal:delivery": Route(get=by_role({"landowner"}), post_roles=frozenset({"landowner"}),
                             post_data=lambda w: {"action": "email", "email-email": "nuevo-correo@example.pr"}),
    "portal:email-confirm": Route(get=public(400), targets=lambda w: [{"token": "bad.token"}]),
    "parcels:owner-address-confirm": Route(get=post_only(AUTHORITY, role_checked_first=True), targets=lambda w: pk(w.owners["M"]),
                                           post_roles=AUTHORITY),
}


def water_csv() -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("agua.csv", b"parcel_id,delivered_on,acre_feet\nW1,2026-10-06,2\n", "text/csv")


# --- the resolver -------------------------------------------------------------------------------------


def resolver_url_names() -> tuple[set[str], list[str]]:
    """Every URL name the resolver knows (``namespace:name``), and the problems found: an
    unnamed pattern or a name used twice cannot be in the matrix."""
    names: set[str] = set()
    problems: list[str] = []

    def walk(patterns: list[Any], prefix: str, route: str) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if pattern.namespace in SKIPPED_NAMESPACES:
                    continue
                namespace = f"{prefix}{pattern.namespace}:" if pattern.namespace else prefix
                walk(pattern.url_patterns, namespace, route + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                where = route + str(pattern.pattern)
                if not pattern.name:
                    problems.append(f"unnamed URL {where!r}")
                    continue
                name = prefix + pattern.name
                if name in names:
                    problems.append(f"URL name {name!r} used twice ({where!r})")
                names.add(name)

    walk(get_resolver().url_patterns, "", "")
    return names, problems


def test_every_url_of_the_app_is_in_the_matrix():
    names, problems = resolver_url_names()
    assert not problems, problems
    assert len(names) > 60  # the walk found the app, not an empty resolver
    missing = sorted(names - MATRIX.keys())
    stale = sorted(MATRIX.keys() - names)
    assert not missing, f"URLs with no entry in the authorization matrix: {missing}"
    assert not stale, f"matrix entries for URLs that no longer exist: {stale}"


def test_the_matrix_follows_the_design():
    """The promises of the README, read off the matrix itself: landowners reach no staff page,
    only the listed pages are public, and each object page of a landowner has a 404 case."""
    public_pages = {name for name, route in MATRIX.items() if route.get[ANONYMOUS] != LOGIN}
    assert public_pages == {
        "login", "logout", "password_reset", "password_reset_done", "password_reset_confirm", "password_reset_complete",
        "set_language", "portal:claim", "portal:activate", "verify:document", "verify:public-key",
        "parcels:import-confirm", "levy:estimate-certify", "levy:compute", "levy:finalize", "billing:void",
        "billing:day-close", "billing:refund", "billing:refund-decide", "billing:session-extend",  # POST only: a GET is 405 before anything else
        "portal:installment-bill", "portal:statement-pdf", "owed:lookup",
        "portal:email-confirm",  # issue 19: the signed link is its own proof
    }
    landowner_pages = {name for name, route in MATRIX.items()
                       if route.get["landowner"] == 200 and route.get[ANONYMOUS] == LOGIN}
    own_account = {"account:security", "account:enrol",  # the signed-in user's own second factor
                   "portal:delivery"}  # and (issue 19) their own owner record's delivery choice
    assert landowner_pages == {"home", "parcels:parcel-detail", "billing:statement", "billing:receipt",
                               "billing:receipt-pdf", "billing:document-pdf", *own_account}
    assert all(MATRIX[name].others is not None for name in landowner_pages - {"home", *own_account})
    for name, route in MATRIX.items():
        if route.post_roles is not None:
            assert ("landowner" not in route.post_roles or name in LANDOWNER_POSTS) and NOROLE not in route.post_roles, name


def test_a_landowner_posts_for_their_own_parcels_documents_only(w, client):
    """The two POSTs a landowner may send (a bill, a numbered statement) answer 404 for another
    owner's parcel and write nothing; for their own they issue the document."""
    sign_in(client, w, "landowner")
    before = fingerprint()
    for url in (reverse("portal:installment-bill", args=[first_installment(w, "B1", 2)]),
                reverse("portal:statement-pdf", args=[w.parcels["B1"].pk])):
        assert client.post(url).status_code == 404, url
    assert changed_tables(before, fingerprint()) == []
    for url in (reverse("portal:installment-bill", args=[first_installment(w, "A2")]),
                reverse("portal:statement-pdf", args=[w.parcels["A1"].pk])):
        response = client.post(url)
        assert response.status_code == 200 and response["Content-Type"] == "application/pdf", url
    assert changed_tables(before, fingerprint())


# --- the crawl ----------------------------------------------------------------------------------------


def outcome_matches(response: Any, expected: Any) -> bool:
    if expected == LOGIN:
        return is_login_redirect(response)
    if response.status_code != expected:
        return False
    return not (expected == 302 and is_login_redirect(response))  # "allowed" is never the login page


def check_get(client: Client, w: World, principal: str, url: str, expected: Any, failures: list[str]) -> None:
    response = client.get(url)
    assert_security_headers(response, f"GET {url} as {principal}")
    if not outcome_matches(response, expected):
        got = response["Location"] if response.status_code == 302 else response.status_code
        failures.append(f"GET {url} as {principal}: expected {expected}, got {got}")


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_each_principal_gets_what_the_design_says(name, w, client):
    route = MATRIX[name]
    assert set(route.get) == set(PRINCIPALS), name
    own = [reverse(name, kwargs=kwargs) + route.query for kwargs in route.targets(w)]
    others = [reverse(name, kwargs=kwargs) + route.query for kwargs in route.others(w)] if route.others else []
    failures: list[str] = []
    for principal in PRINCIPALS:
        sign_in(client, w, principal)
        expected = route.get[principal]
        for url in own:
            check_get(client, w, principal, url, expected, failures)
        for url in others:
            # another owner's object: a landowner must not even learn that it exists
            check_get(client, w, principal, url, 404 if principal == "landowner" else expected, failures)
    assert not failures, "\n".join(failures)


POST_ROUTES = sorted(name for name, route in MATRIX.items() if route.post_roles is not None)


@pytest.mark.parametrize("name", POST_ROUTES)
def test_a_post_by_a_wrong_role_is_refused_and_writes_nothing(name, w, client):
    route = MATRIX[name]
    url = reverse(name, kwargs=route.targets(w)[0])
    before = fingerprint()
    failures = []
    for principal in PRINCIPALS:
        if principal in route.post_roles:
            continue
        sign_in(client, w, principal)
        response = client.post(url, route.post_data(w))
        assert_security_headers(response, f"POST {url} as {principal}")
        expected = LOGIN if principal == ANONYMOUS else 403
        if not outcome_matches(response, expected):
            failures.append(f"POST {url} as {principal}: expected {expected}, got {response.status_code}")
    assert not failures, "\n".join(failures)
    assert changed_tables(before, fingerprint()) == [], f"a refused POST to {url} wrote to the database"
    # The same POST by a role that may send it writes: the refusals above refused a real write.
    sign_in(client, w, sorted(route.post_roles)[0])
    response = client.post(url, route.post_data(w))
    assert response.status_code in (200, 302), (name, response.status_code)
    assert changed_tables(before, fingerprint()), f"the POST data for {name} writes nothing even when allowed: fix the test"


@pytest.mark.parametrize("principal", PRINCIPALS)
def test_admin_site_refuses_every_principal(principal, w, client):
    """The admin site is outside the matrix (its own ``is_staff`` gate): no role of the app passes it."""
    sign_in(client, w, principal)
    for url in ("/admin/", "/admin/auth/user/", "/admin/auth/group/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), (principal, url)
    if principal != ANONYMOUS:
        client.logout()
        response = client.post("/admin/login/?next=/admin/", {"username": w.user(principal).username,
                                                               "password": "Correct-Horse-Battery-9"})
        assert response.status_code == 200 and "_auth_user_id" not in client.session, principal


def test_a_landowners_own_pages_list_nothing_of_another_owner(w, client):
    sign_in(client, w, "landowner")
    home = client.get(reverse("home")).content.decode()
    assert reverse("parcels:parcel-detail", args=[w.parcels["A1"].pk]) in home
    assert reverse("billing:receipt", args=[w.receipts["A"].pk]) in home
    for parcel in ("B1", "X1", "F1"):
        assert reverse("parcels:parcel-detail", args=[w.parcels[parcel].pk]) not in home, parcel
    for receipt in ("B", "X"):
        assert reverse("billing:receipt", args=[w.receipts[receipt].pk]) not in home, receipt
        assert w.receipts[receipt].display_number not in home, receipt
    statement = client.get(reverse("billing:statement", args=[w.parcels["A1"].pk])).content.decode()
    assert reverse("billing:document-pdf", args=[w.bill_docs["A"].pk]) in statement
    assert reverse("billing:document-pdf", args=[w.bill_docs["B"].pk]) not in statement
    # the stamped copy of another owner's receipt is as hidden as the receipt itself
    copy = reverse("billing:receipt-pdf", args=[w.receipts["B"].pk]) + "?copia=1"
    assert client.get(copy).status_code == 404
    sign_in(client, w, "landowner_b")
    assert client.get(copy).status_code == 200  # while its owner gets it


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/", "http://testserver.evil.example/"])
def test_no_open_redirect_after_signing_in_or_switching_language(w, client, target):
    response = client.post(reverse("login") + f"?next={target}", {"username": "sec_auditor", "password": "Correct-Horse-Battery-9"})
    assert response.status_code == 302 and response["Location"] == reverse("home"), response["Location"]
    response = client.post(reverse("set_language"), {"language": "en", "next": target})
    assert response.status_code == 302 and response["Location"] == "/", response["Location"]
