"""Issue 19: courtesy e-mail reminders to landowners (¶12, ¶13, ¶14), sent by the periodic task
``billing.reminders`` (``billing.tasks``) and ``manage.py billing reminders --as-of D``.

Three kinds, each to the parcel's owner only when the owner has a confirmed e-mail
(``Owner.email`` set and ``Owner.email_confirmed_at`` recorded), in the owner's language
(``Owner.preferred_language``):

- ``before``: ``N`` days before an installment's last day to pay, for each ``N`` of
  ``settings.REMINDER_DAYS_BEFORE`` (default 15 and 3). A run on a day ``k`` days before the
  last day sends the reminder of the smallest ``N >= k``: a day the task did not run is caught
  up by the next run, and a reminder whose day has passed gives way to the nearer one;
- ``delinquent``: on the installment's first delinquent day (¶12), naming the surcharge that now
  applies and the next step (¶14); caught up during the first surcharge month only;
- ``seizure``: when a seizure notice (¶14) is issued for the parcel; caught up during the
  notice's 30-day term while the case is open.

Each says what is owed as of its date (the account as ``billing.accounts.account_state`` and
``rules.amount_to_pay`` read it, as the bill and the counter do), the last day to pay, the
payment reference (``billing.references``) and where to pay (the offices, as the bill shows
them), and says in a line that it is a courtesy: one not sent or not read never moves a date
or waives a surcharge (¶13), and it is not the ¶14 notice.

At most one of each kind per charge and owner: ``ReminderSend``'s unique constraints. Each
reminder is its own transaction: the claim row is inserted, the e-mail handed to the backend and
its ``ReminderAttempt`` recorded before the commit, so a concurrent run waits on the claim's
unique index and then finds it (nothing is sent twice). Decision on failures: a backend error is
recorded as a failed attempt (the error's text, the address, the time) and the claim stays; every
later run retries it while the reminder is still timely (the windows above), at most
``MAX_ATTEMPTS`` times in all. A run is not one transaction: a failure of one e-mail must not
undo the record of another already handed to the backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _

from levy.rules import add_months
from parcels.models import Owner, Parcel
from parcels.money import money_text

from .. import rules
from ..accounts import account_states, delinquency_parameters
from ..models import Charge, Office, ReminderAttempt, ReminderSend, SeizureCase, SeizureStep
from ..references import payment_reference, reference_display
from ..wording import charge_label, long_date, rate_label

MAX_ATTEMPTS = 3  # a reminder the backend refused this many times is given up (the log keeps each try)
# A charge whose stored last day is further back than this cannot be in a reminder's window (its
# first surcharge month ended); closures move a last day later by days, never by months.
_LOOK_BACK_DAYS = 120


@dataclass(frozen=True)
class ReminderDue:
    """One reminder a run would send, with the figures it states (as of ``as_of``)."""

    kind: str
    owner: Owner
    parcel: Parcel
    charge: Charge
    as_of: date
    amount: Decimal  # what to pay (rules.amount_to_pay; a seizure reminder: all that is owed today)
    pay_by: date | None  # until when ``amount`` holds
    last_day: date  # the installment's last day to pay (¶12)
    days_before: int = 0
    surcharge: Decimal = Decimal("0.00")  # ``delinquent``: the charge's surcharge so far (¶12)
    unpaid_principal: Decimal = Decimal("0.00")
    rate: Decimal = Decimal("0.005")
    seizure_step: SeizureStep | None = None

    @property
    def reference(self) -> str:
        return payment_reference(self.charge.pk)

    @property
    def address(self) -> str:
        return self.owner.email

    def describe(self) -> str:
        """One line for the command line: kind, parcel, charge, address, amount."""
        kind = f"{self.kind} {self.days_before}d" if self.kind == ReminderSend.Kind.BEFORE_LAST_DAY else self.kind
        return (f"{kind} {self.parcel.parcel_id} {self.charge.fiscal_year.label}/{self.charge.number or '-'} "
                f"to {self.address} ({self.owner.preferred_language}) {money_text(self.amount)} ref {self.reference}")


@dataclass(frozen=True)
class ReminderOutcome:
    due: ReminderDue
    status: str  # sent, failed, would_send (dry run), already (sent before), given_up (MAX_ATTEMPTS failures)
    error: str = ""


@dataclass(frozen=True)
class ReminderRun:
    as_of: date
    dry_run: bool
    outcomes: tuple[ReminderOutcome, ...] = field(default_factory=tuple)

    def count(self, status: str) -> int:
        return sum(1 for outcome in self.outcomes if outcome.status == status)


def confirmed() -> Q:
    """The owners a reminder may go to: a confirmed e-mail (issue 19)."""
    return ~Q(email="") & Q(email_confirmed_at__isnull=False)


def reminders_due(*, as_of: date) -> list[ReminderDue]:
    """Reads only: every reminder timely on ``as_of`` (sent or not), in parcel order."""
    owners = Owner.objects.filter(confirmed())
    days = sorted(settings.REMINDER_DAYS_BEFORE)
    charges = (Charge.objects.filter(kind=Charge.Kind.INSTALLMENT, accrues_surcharge=True, parcel__owner__in=owners,
                                     last_day_to_pay__lte=as_of + timedelta(days=max(days, default=0)),
                                     last_day_to_pay__gte=as_of - timedelta(days=_LOOK_BACK_DAYS))
               .values_list("pk", "parcel_id"))
    wanted = {pk for pk, _parcel in charges}
    steps = list(SeizureStep.objects.filter(kind=SeizureStep.Kind.NOTICE, case__status=SeizureCase.Status.OPEN,
                                            case__parcel__owner__in=owners, issued_on__lte=as_of, term_ends__gte=as_of)
                 .select_related("case").defer("pdf", "debt"))
    parcel_ids = {parcel for _pk, parcel in charges} | {step.case.parcel_id for step in steps}
    if not parcel_ids:
        return []
    parcels = Parcel.objects.filter(pk__in=parcel_ids).select_related("owner")
    accounts = account_states(parcels=parcels, as_of=as_of, roll_lines=False)
    rate = delinquency_parameters(as_of).surcharge_rate
    notices: dict[int, list[SeizureStep]] = {}
    for step in steps:
        notices.setdefault(step.case.parcel_id, []).append(step)
    found: list[ReminderDue] = []
    for account in sorted(accounts.values(), key=lambda account: account.parcel.parcel_id):
        parcel, state = account.parcel, account.state
        by_key = {s.key: s for s in state.charges}
        for key, charge in account.charges.items():
            if charge.pk not in wanted:
                continue
            charge_state = by_key[key]
            if charge_state.balance <= 0:
                continue
            common = {"owner": parcel.owner, "parcel": parcel, "charge": charge, "as_of": as_of,
                      "last_day": charge_state.last_day, "rate": rate}
            to_pay = rules.amount_to_pay(account=state, charge_key=key)
            ahead = (charge_state.last_day - as_of).days
            first_delinquent = charge_state.last_day + timedelta(days=1)
            if ahead >= 0:
                nearest = next((n for n in days if n >= ahead), None)
                if nearest is not None:
                    found.append(ReminderDue(kind=ReminderSend.Kind.BEFORE_LAST_DAY, days_before=nearest, amount=to_pay.amount,
                                             pay_by=to_pay.valid_through, **common))
            elif first_delinquent <= as_of < add_months(first_delinquent, 1) and charge_state.principal_due > 0:
                found.append(ReminderDue(kind=ReminderSend.Kind.DELINQUENT, amount=to_pay.amount, pay_by=to_pay.valid_through,
                                         surcharge=charge_state.surcharge, unpaid_principal=charge_state.principal_due,
                                         **common))
        owing = [s for s in state.charges if s.balance > 0 and s.due <= as_of]
        for step in notices.get(parcel.pk, []):
            if not owing:  # paid in full: the procedure stops (¶14), nothing to remind of
                continue
            oldest = owing[0]  # payments go to the oldest charge first: its reference pays the account
            found.append(ReminderDue(
                kind=ReminderSend.Kind.SEIZURE_NOTICE, owner=parcel.owner, parcel=parcel, charge=account.charges[oldest.key],
                as_of=as_of, amount=state.total_due, pay_by=rules.owed_today_holds_through(account=state),
                last_day=oldest.last_day, rate=rate, seizure_step=step,
            ))
    return found


def _claim_filter(due: ReminderDue) -> dict:
    if due.kind == ReminderSend.Kind.SEIZURE_NOTICE:
        return {"kind": due.kind, "seizure_step": due.seizure_step, "owner": due.owner}
    return {"kind": due.kind, "charge": due.charge, "owner": due.owner, "days_before": due.days_before}


def reminders_send(*, as_of: date, dry_run: bool = False, connection=None) -> ReminderRun:  # noqa: ANN001
    """Issue 19: sends every reminder timely on ``as_of`` that was not sent yet (module
    docstring), each claimed, sent and logged in its own transaction; ``dry_run`` sends and
    writes nothing and says what it would send. ``connection``: an e-mail backend other than
    ``settings.EMAIL_BACKEND`` (the demo's). Returns what happened to each."""
    outcomes = []
    connection = None if dry_run else connection or get_connection()
    for due in reminders_due(as_of=as_of):
        if dry_run:
            claim = ReminderSend.objects.filter(**_claim_filter(due)).first()
            tried = list(claim.attempts.values_list("status", flat=True)) if claim else []
            outcomes.append(ReminderOutcome(due=due, status=_status_before(tried) or "would_send"))
            continue
        outcomes.append(_send_one(due, connection))
    return ReminderRun(as_of=as_of, dry_run=dry_run, outcomes=tuple(outcomes))


def _status_before(tried: Sequence[str]) -> str:
    """What earlier attempts leave to do: ``already`` (one was sent), ``given_up``, or "" (send)."""
    if ReminderAttempt.Status.SENT in tried:
        return "already"
    if len(tried) >= MAX_ATTEMPTS:
        return "given_up"
    return ""


@transaction.atomic
def _send_one(due: ReminderDue, connection) -> ReminderOutcome:  # noqa: ANN001 (a Django e-mail backend)
    try:
        with transaction.atomic():  # a savepoint: a concurrent claim waits here until the other commits
            claim = ReminderSend.objects.create(**{**_claim_filter(due), "parcel": due.parcel, "charge": due.charge})
        tried: list[str] = []
    except IntegrityError:
        claim = ReminderSend.objects.select_for_update().get(**_claim_filter(due))
        tried = list(claim.attempts.values_list("status", flat=True))
        done = _status_before(tried)
        if done:
            return ReminderOutcome(due=due, status=done)
    language = due.owner.preferred_language
    subject, body = reminder_message(due)
    message = EmailMessage(subject, body, to=[due.address], connection=connection)
    try:
        message.send(fail_silently=False)
    except Exception as exc:  # any backend error (SMTP refused, network down): logged, retried later
        error = f"{type(exc).__name__}: {exc}"[:2000] or type(exc).__name__
        ReminderAttempt.objects.create(send=claim, status=ReminderAttempt.Status.FAILED, to_address=due.address,
                                       language=language, subject=subject[:250], error=error, as_of=due.as_of,
                                       amount=due.amount)
        return ReminderOutcome(due=due, status="failed", error=error)
    ReminderAttempt.objects.create(send=claim, status=ReminderAttempt.Status.SENT, to_address=due.address, language=language,
                                   subject=subject[:250], as_of=due.as_of, amount=due.amount)
    return ReminderOutcome(due=due, status="sent")


# --- The e-mail -------------------------------------------------------------------------------


def _offices_text(lang: str) -> list[str]:
    """¶13: where to pay: every Collector's office as the bill shows it (the one the bills name first)."""
    lines = []
    for office in Office.objects.order_by("-on_bills", "code"):
        block = office.return_block()
        lines.append(f"  {office.name}")
        if len(block) > 1:
            lines.append("  " + _("Dirección: %(a)s") % {"a": ", ".join(block[1:])})
        if office.phone:
            lines.append("  " + _("Teléfono: %(p)s") % {"p": office.phone})
        hours = office.hours_en if lang == "en" and office.hours_en else office.hours_es
        if hours:
            lines.append("  " + _("Horario: %(h)s") % {"h": hours})
        ways = office.ways_to_pay_en if lang == "en" and office.ways_to_pay_en else office.ways_to_pay_es
        if ways:
            lines.append("  " + _("Formas de pago: %(w)s") % {"w": " ".join(ways.split())})
        lines.append("")
    if not lines:
        lines = ["  " + _("La Oficina del Colector de su municipio."), ""]
    return lines


def reminder_message(due: ReminderDue) -> tuple[str, str]:
    """The subject and plain-text body of a reminder, in the owner's language."""
    lang = due.owner.preferred_language if due.owner.preferred_language in ("es", "en") else "es"
    with translation.override(lang):
        charge = due.charge
        label = charge_label(kind=charge.kind, fiscal_year=charge.fiscal_year.label, number=charge.number,
                             description=charge.description, due_date=charge.due_date)
        facts = {"parcel": due.parcel.parcel_id, "charge": label, "last_day": long_date(due.last_day, lang),
                 "as_of": long_date(due.as_of, lang), "amount": money_text(due.amount),
                 "pay_by": long_date(due.pay_by, lang), "rate": rate_label(due.rate), "days": due.days_before,
                 "surcharge": money_text(due.surcharge), "unpaid": money_text(due.unpaid_principal),
                 "first": long_date(due.last_day + timedelta(days=1), lang)}
        if due.kind == ReminderSend.Kind.BEFORE_LAST_DAY:
            subject = _("Recordatorio: el %(charge)s del predio %(parcel)s se paga sin recargo hasta el %(last_day)s") % facts
            opening = [_("Le recordamos que el último día para pagar sin recargo el %(charge)s del predio %(parcel)s es "
                         "el %(last_day)s (faltan %(days)s días).") % facts]
        elif due.kind == ReminderSend.Kind.DELINQUENT:
            subject = _("Aviso de cortesía: el %(charge)s del predio %(parcel)s está moroso desde el %(first)s") % facts
            opening = [
                _("El %(charge)s del predio %(parcel)s no se pagó a más tardar el %(last_day)s y desde el %(first)s está "
                  "moroso (¶12).") % facts,
                _("Ahora aplica el recargo del ¶12: %(rate)s de lo no pagado por cada mes o fracción de mes desde esa "
                  "fecha; hoy es %(surcharge)s (%(rate)s sobre %(unpaid)s), y aumenta otro %(rate)s cada mes que siga "
                  "sin pagarse.") % facts,
                _("Próximo paso: si no se paga, el Secretario de Hacienda cobrará la deuda por el procedimiento de "
                  "embargo de las contribuciones sobre la propiedad (¶14)."),
            ]
        else:
            step = due.seizure_step
            facts |= {"number": step.number, "issued": long_date(step.issued_on, lang), "term": long_date(step.term_ends, lang)}
            subject = _("Aviso de cortesía: se emitió la notificación de embargo %(number)s del predio %(parcel)s") % facts
            opening = [
                _("El %(issued)s el Secretario de Hacienda emitió la notificación de embargo %(number)s del predio "
                  "%(parcel)s por contribuciones de riego no pagadas (¶14); su plazo vence el %(term)s.") % facts,
                _("El pago total de la deuda detiene el procedimiento."),
            ]
        lines = [_("Saludos, %(name)s:") % {"name": due.owner.name}, "", *opening, ""]
        lines.append(_("Predio: %(parcel)s") % facts)
        if due.kind == ReminderSend.Kind.SEIZURE_NOTICE:
            lines.append(_("Adeudado al %(as_of)s: %(amount)s") % facts)
            if due.pay_by:
                lines.append(_("Esta cantidad vale hasta el %(pay_by)s, inclusive; después sube por el recargo (¶12).") % facts)
        else:
            lines.append(_("Plazo: %(charge)s") % facts)
            lines.append(_("Último día para pagar sin recargo: %(last_day)s") % facts)
            lines.append(_("Total a pagar al %(as_of)s: %(amount)s, a más tardar el %(pay_by)s (paga este plazo y lo que "
                           "se deba antes de él).") % facts)
        lines.append(_("Referencia de pago: %(ref)s (indíquela al pagar)") % {"ref": reference_display(due.reference)})
        lines += ["", _("Dónde pagar (¶13):"), *_offices_text(lang)]
        lines.append(_("Su estado de cuenta al día: %(url)s") % {"url": settings.SITE_URL + reverse("owed:lookup")})
        lines += [
            "",
            _("Este correo es una cortesía (¶13): no hace falta que se le cobre; no recibirlo o no leerlo no cambia "
              "ninguna fecha ni elimina ningún recargo."),
            _("Este correo no es la notificación de embargo del ¶14."),
            "",
            "-- ",
            _("Distrito de Regadío del Valle de Lajas"),
        ]
        return subject, "\n".join(lines)
