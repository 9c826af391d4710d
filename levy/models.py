"""The yearly levy: dated legal parameters, certified estimates, levies and the roll (*padrón*).

Design:
- ``LegalParameterSet`` holds the statutory constants (2% reserve cap, 2% margin, 50% pumped
  weight, 12 months, 60 days, ½% a month, the month convention …) as dated values. A change in
  the law is a new row (``legal_parameters_add``: never dated in the past, with who and why);
  rows never change (append-only). Each rule uses the row in force on its own date: a levy the
  row of its July 1 (stored on the levy), the grace days and the Saturday rule the row of an
  installment's due date, the late-roll rule the row of the finalization date, water rates the
  row of the delivery date, and each ¶12 surcharge period the rate of its first day
  (``docs/interpretations.md``). So a new row never changes a period that began before it.
- ``Estimate`` is what the Authority enters for a fiscal year (¶1(1), ¶1(2), ¶2, ¶3). Once
  certified its amounts never change (a trigger refuses it); replacing it is a new estimate that
  says why and points at the one it supersedes.
- ``Levy`` is one computation from a certified estimate and the registry as it was, with the
  worksheet figures, the parameters used and a fingerprint of the registry. A draft may be
  recomputed; ``final`` is the finalized roll (¶11), at most one per fiscal year, and the
  database refuses any UPDATE or DELETE of a final levy and of its lines.
- ``RollLine`` snapshots the parcel data the charge was computed from (acres, inclusion, water
  date, credit %, owner) so a roll can be reprinted and recomputed exactly years later.
- ``RollCorrection`` is a supplementary entry after finalization: it references the line it
  corrects, gives a reason and its own due date, and is billed and reconciled on its own.
Amounts are dollars in ``MoneyField(max_digits=14, decimal_places=2)`` (USD).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import date, datetime
from decimal import Decimal

import pgtrigger
from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import TruncDate
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from djmoney.models.fields import MoneyField

from parcels.database import APPEND_ONLY, NO_TRUNCATE

from . import rules


def money_field(verbose_name: str, **kwargs) -> MoneyField:
    return MoneyField(verbose_name, max_digits=14, decimal_places=2, default_currency="USD", currency_choices=[("USD", "USD")], **kwargs)


class LegalParameterSet(models.Model):
    """Statutory constants in force from ``effective_from`` (each field cites its ¶)."""

    class MonthConvention(models.TextChoices):
        CALENDAR = "calendar", _("Meses calendario (fin de mes ajustado)")
        THIRTY_DAY = "thirty_day", _("Meses de 30 días")

    effective_from = models.DateField(_("vigente desde"), unique=True)
    source = models.CharField(_("fuente"), max_length=200)
    reserve_cap_rate = models.DecimalField(_("tope del fondo de reserva ¶1(2)"), max_digits=6, decimal_places=4)
    safety_margin_rate = models.DecimalField(_("margen de seguridad ¶3"), max_digits=6, decimal_places=4)
    pumped_weight = models.DecimalField(_("peso de acres por bombeo ¶5, ¶6"), max_digits=6, decimal_places=4)
    water_months = models.PositiveSmallIntegerField(_("meses de agua antes de pagar ¶8, ¶10"))
    month_convention = models.CharField(_("cómputo de meses ¶8, ¶10"), max_length=12, choices=MonthConvention.choices)
    grace_days = models.PositiveSmallIntegerField(_("días para pagar ¶12"))
    surcharge_rate = models.DecimalField(_("recargo por mes o fracción ¶12"), max_digits=6, decimal_places=4)
    saturdays_move_last_day = models.BooleanField(_("el sábado también corre el último día ¶12"), default=False)
    late_roll_due_on_finalization = models.BooleanField(
        _("plazo vence al finalizar si el padrón se finalizó tarde ¶11, ¶12"), default=True
    )
    water_first_year_rate = models.DecimalField(_("agua: primer año, por acre-pie (sec. 374a)"), max_digits=6, decimal_places=2)
    water_max_authority_rate = models.DecimalField(_("agua: tope de la tarifa de la Autoridad (sec. 374a)"), max_digits=6, decimal_places=2)
    water_pumped_rate = models.DecimalField(_("agua: bombeo propio tras el primer año (sec. 374a)"), max_digits=6, decimal_places=2)
    reason = models.TextField(_("razón"), blank=True, default="")
    # Null only for the rows seeded by migration (the statute itself), which no user entered.
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-effective_from"]
        verbose_name = _("parámetros legales")
        verbose_name_plural = _("parámetros legales")
        # A row in force has been used (levies, last days, surcharge periods): a change is a new row.
        triggers = APPEND_ONLY

    # Fields a new row may change (everything but its date, who, why and when); the rest is copied.
    VALUE_FIELDS = (
        "source", "reserve_cap_rate", "safety_margin_rate", "pumped_weight", "water_months", "month_convention",
        "grace_days", "surcharge_rate", "saturdays_move_last_day", "late_roll_due_on_finalization",
        "water_first_year_rate", "water_max_authority_rate", "water_pumped_rate",
    )

    @classmethod
    def in_force(cls, on: date, *, known_by: datetime | None = None) -> LegalParameterSet:
        """The row in force on ``on`` (among those recorded before ``known_by`` when given: the
        books as they stood then)."""
        rows = cls.objects.filter(effective_from__lte=on)
        if known_by is not None:
            rows = rows.filter(cls.recorded_before(known_by))
        found = rows.order_by("-effective_from").first()
        if found is None:
            raise rules.LevyRuleError(f"no legal parameters in force on {on.isoformat()}")
        return found

    @classmethod
    def history(cls, *, known_by: datetime | None = None) -> ParameterHistory:
        """Every row (recorded before ``known_by`` when given), read once, to look up many dates
        without a query each (an account replay needs the row of each charge's due date and the
        surcharge rate of each period)."""
        rows = cls.objects.all() if known_by is None else cls.objects.filter(cls.recorded_before(known_by))
        return ParameterHistory(rows=tuple(rows.order_by("effective_from")))

    @staticmethod
    def recorded_before(moment: datetime) -> Q:
        """The rows the books held at ``moment``: those recorded before it, and those in force
        before the day they were recorded. A new row never takes effect before the day it is
        recorded (``legal_parameters_add``), so the second are the statute's own rows (1953),
        law long before the system that entered them was installed."""
        recorded_on = TruncDate("created_at", tzinfo=timezone.get_default_timezone())
        return Q(created_at__lt=moment) | Q(effective_from__lt=recorded_on)

    def as_rules(self) -> rules.LegalParameters:
        return rules.LegalParameters(
            effective_from=self.effective_from, reserve_cap_rate=self.reserve_cap_rate,
            safety_margin_rate=self.safety_margin_rate, pumped_weight=self.pumped_weight,
            water_months=self.water_months, month_convention=self.month_convention,
            grace_days=self.grace_days, surcharge_rate=self.surcharge_rate,
        )

    def snapshot(self) -> dict:
        return {
            field.name: str(getattr(self, field.name))
            for field in self._meta.fields
            if field.name not in ("id", "created_at", "created_by", "reason")
        }


@dataclass(frozen=True)
class ParameterHistory:
    """The legal-parameter rows, oldest first, as read at one moment."""

    rows: tuple[LegalParameterSet, ...]
    dates: tuple[date, ...] = dataclass_field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dates", tuple(row.effective_from for row in self.rows))

    def in_force(self, on: date) -> LegalParameterSet:
        """The row in force on ``on``: the latest with ``effective_from <= on``."""
        index = bisect_right(self.dates, on)
        if index == 0:
            raise rules.LevyRuleError(f"no legal parameters in force on {on.isoformat()}")
        return self.rows[index - 1]

    @property
    def surcharge_schedule(self) -> tuple[tuple[date, Decimal], ...]:
        """¶12: the dated surcharge rates ``((effective_from, rate), …)``, oldest first, for
        ``billing.rules.ledger_state(schedule=…)``."""
        return tuple((row.effective_from, row.surcharge_rate) for row in self.rows)


class FiscalYear(models.Model):
    """July 1 – June 30, written ``2026-2027``."""

    label = models.CharField(_("año fiscal"), max_length=9, unique=True)
    start = models.DateField(unique=True)

    class Meta:
        ordering = ["-start"]

    def __str__(self) -> str:
        return self.label

    @property
    def roll_deadline(self) -> date:
        """¶11: the Secretary finishes the roll no later than July 1."""
        return self.start

    @property
    def end(self) -> date:
        return date(self.start.year + 1, 6, 30)


class Estimate(models.Model):
    class Status(models.TextChoices):
        ENTERED = "entered", _("Sin certificar")
        CERTIFIED = "certified", _("Certificado")
        WITHDRAWN = "withdrawn", _("Reemplazado")

    fiscal_year = models.ForeignKey(FiscalYear, on_delete=models.PROTECT, related_name="estimates")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ENTERED)
    om_estimate = money_field(_("gastos de operación y mantenimiento ¶1(1)"))
    reserve = money_field(_("fondo de reserva ¶1(2)"))
    deficit = money_field(_("déficit del Fondo de Explotación ¶2"), default=Decimal("0"))
    surplus = money_field(_("superávit del Fondo de Explotación ¶2"), default=Decimal("0"))
    misc_income = money_field(_("ingresos misceláneos ¶3"))
    certified_credits = money_field(_("créditos certificados ¶1(3)"), null=True, blank=True)
    reason = models.TextField(_("razón del reemplazo"), blank=True)
    supersedes = models.OneToOneField("self", on_delete=models.PROTECT, null=True, blank=True, related_name="superseded_by")
    entered_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    entered_at = models.DateTimeField(auto_now_add=True)
    certified_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    certified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-entered_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["fiscal_year"], condition=~Q(status="withdrawn"), name="one_current_estimate_per_year"),
            models.CheckConstraint(
                condition=Q(om_estimate__gte=0) & Q(reserve__gte=0) & Q(deficit__gte=0) & Q(surplus__gte=0) & Q(misc_income__gte=0),
                name="estimate_amounts_not_negative",
            ),
            models.CheckConstraint(condition=Q(deficit=0) | Q(surplus=0), name="estimate_deficit_or_surplus"),
            models.CheckConstraint(
                # A withdrawn estimate may never have been certified (entered again before certification).
                condition=~Q(status="certified") | (Q(certified_by__isnull=False) & Q(certified_at__isnull=False)),
                name="estimate_certified_has_who_and_when",
            ),
        ]
        triggers = [
            # A certified estimate's amounts never change; it can only be withdrawn by a new one.
            pgtrigger.Protect(
                name="certified_estimate_amounts_frozen",
                operation=pgtrigger.Update,
                condition=pgtrigger.Q(old__status__in=["certified", "withdrawn"])
                & (
                    pgtrigger.Q(old__om_estimate__df=pgtrigger.F("new__om_estimate"))
                    | pgtrigger.Q(old__reserve__df=pgtrigger.F("new__reserve"))
                    | pgtrigger.Q(old__deficit__df=pgtrigger.F("new__deficit"))
                    | pgtrigger.Q(old__surplus__df=pgtrigger.F("new__surplus"))
                    | pgtrigger.Q(old__misc_income__df=pgtrigger.F("new__misc_income"))
                    | pgtrigger.Q(old__certified_credits__df=pgtrigger.F("new__certified_credits"))
                    | pgtrigger.Q(old__certified_by_id__df=pgtrigger.F("new__certified_by_id"))
                    | pgtrigger.Q(old__certified_at__df=pgtrigger.F("new__certified_at"))
                    | pgtrigger.Q(new__status="entered")
                ),
            ),
            pgtrigger.Protect(name="certified_estimate_not_deleted", operation=pgtrigger.Delete,
                              condition=~pgtrigger.Q(old__status="entered")),
            NO_TRUNCATE,
        ]

    def amounts(self) -> dict[str, Decimal]:
        return {
            "om_estimate": self.om_estimate.amount, "reserve": self.reserve.amount, "deficit": self.deficit.amount,
            "surplus": self.surplus.amount, "misc_income": self.misc_income.amount,
            "certified_credits": self.certified_credits.amount if self.certified_credits is not None else None,
        }


class Levy(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", _("Borrador")
        FINAL = "final", _("Finalizado")

    fiscal_year = models.ForeignKey(FiscalYear, on_delete=models.PROTECT, related_name="levies")
    estimate = models.ForeignKey(Estimate, on_delete=models.PROTECT, related_name="levies")
    status = models.CharField(max_length=5, choices=Status.choices, default=Status.DRAFT)
    # The row in force on the fiscal year's July 1 that the levy was computed with; ``parameters``
    # is its snapshot as printed on the worksheet.
    parameter_set = models.ForeignKey(
        LegalParameterSet, on_delete=models.PROTECT, related_name="levies", verbose_name=_("parámetros legales usados"),
    )
    parameters = models.JSONField(_("parámetros legales usados"))
    registry_fingerprint = models.CharField(max_length=64)
    om_estimate = money_field(_("¶1(1) gastos de O&M"))
    reserve = money_field(_("¶1(2) fondo de reserva"))
    credits = money_field(_("¶1(3) créditos"))
    credits_certified = models.BooleanField(default=False)
    deficit = money_field(_("¶2 déficit"))
    surplus = money_field(_("¶2 superávit"))
    misc_income = money_field(_("¶3 ingresos misceláneos"))
    k0 = money_field(_("base antes de créditos"))
    subtotal = money_field(_("subtotal"))
    safety_margin = money_field(_("¶3 margen de seguridad"))
    total_levy = money_field(_("¶4 contribución total"))
    gravity_acres = models.DecimalField(max_digits=16, decimal_places=4)
    pumped_acres = models.DecimalField(max_digits=16, decimal_places=4)
    equivalent_acres = models.DecimalField(max_digits=17, decimal_places=5)  # ¶5: half a 4-place acre needs 5
    rate_gravity = models.DecimalField(_("¶6 tasa por acre por gravedad"), max_digits=18, decimal_places=6)
    rate_pumped = models.DecimalField(_("¶6 tasa por acre por bombeo"), max_digits=18, decimal_places=6)
    parcels_levied = models.PositiveIntegerField()
    parcels_in_roll = models.PositiveIntegerField()
    roll_total = money_field(_("total del padrón"))
    roll_credits = money_field(_("créditos concedidos"))
    roll_net = money_field(_("neto del padrón"))
    computed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    computed_at = models.DateTimeField()
    finalized_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    finalized_at = models.DateTimeField(null=True, blank=True)
    finalized_on = models.DateField(null=True, blank=True)
    finalized_late = models.BooleanField(default=False)

    class Meta:
        ordering = ["-computed_at"]
        verbose_name_plural = "levies"
        constraints = [
            models.UniqueConstraint(fields=["fiscal_year"], condition=Q(status="final"), name="one_final_levy_per_year"),
            models.UniqueConstraint(fields=["fiscal_year"], condition=Q(status="draft"), name="one_draft_levy_per_year"),
            models.CheckConstraint(
                condition=Q(status="draft") | (Q(finalized_by__isnull=False) & Q(finalized_at__isnull=False) & Q(finalized_on__isnull=False)),
                name="final_levy_has_who_and_when",
            ),
        ]
        triggers = [
            pgtrigger.Protect(name="final_levy_unchanged", operation=pgtrigger.Update | pgtrigger.Delete,
                              condition=pgtrigger.Q(old__status="final")),
            NO_TRUNCATE,
        ]

    @property
    def is_final(self) -> bool:
        return self.status == self.Status.FINAL


class RollLine(models.Model):
    """One parcel on the roll (¶9), with the parcel data the charge was computed from.

    Amounts are plain dollar decimals here (not ``MoneyField``): a roll has up to 100,000 lines of
    six amounts each and the levy it belongs to carries the currency."""

    # The (levy, parcel_code) and (levy, parcel) indexes cover lookups by levy; owner lookups go
    # through the parcel. Fewer indexes keep a 100,000-line roll quick to write.
    levy = models.ForeignKey(Levy, on_delete=models.CASCADE, related_name="lines", db_index=False)
    parcel = models.ForeignKey("parcels.Parcel", on_delete=models.PROTECT, related_name="roll_lines")
    parcel_code = models.CharField(_("catastro"), max_length=40)
    owner = models.ForeignKey("parcels.Owner", on_delete=models.PROTECT, related_name="+", db_index=False)
    owner_key = models.CharField(max_length=40)
    owner_name = models.CharField(max_length=200)
    inclusion = models.CharField(max_length=10)
    water_since = models.DateField(null=True)
    gravity_acres = models.DecimalField(max_digits=12, decimal_places=4)
    pumped_acres = models.DecimalField(max_digits=12, decimal_places=4)
    equivalent_acres = models.DecimalField(max_digits=14, decimal_places=5)  # ¶5: half a 4-place acre needs 5
    credit_percent = models.DecimalField(max_digits=5, decimal_places=2)
    levied = models.BooleanField()
    reason = models.CharField(max_length=20)
    om_charge = models.DecimalField(max_digits=14, decimal_places=2)
    credit = models.DecimalField(max_digits=14, decimal_places=2)
    net = models.DecimalField(max_digits=14, decimal_places=2)
    first_installment = models.DecimalField(max_digits=14, decimal_places=2)
    second_installment = models.DecimalField(max_digits=14, decimal_places=2)

    class Meta:
        ordering = ["parcel_code"]
        constraints = [
            models.UniqueConstraint(fields=["levy", "parcel"], name="one_line_per_parcel"),
            models.CheckConstraint(condition=Q(net=models.F("om_charge") - models.F("credit")), name="rollline_net"),
            models.CheckConstraint(
                condition=Q(first_installment=models.F("net") - models.F("second_installment")), name="rollline_halves",
            ),
            models.CheckConstraint(condition=Q(om_charge__gte=0) & Q(credit__gte=0) & Q(net__gte=0), name="rollline_not_negative"),
        ]
        indexes = [models.Index(fields=["levy", "parcel_code"])]
        # Statement-level checks (transition tables): one query per statement, not one per line,
        # so writing a 100,000-line draft stays fast while a final roll refuses every change.
        triggers = [
            pgtrigger.Trigger(
                name=f"final_roll_lines_no_{operation}",
                operation=getattr(pgtrigger, operation.capitalize()),
                when=pgtrigger.After,
                level=pgtrigger.Statement,
                referencing=pgtrigger.Referencing(**{"old" if operation == "delete" else "new": "changed_rows"}),
                func=pgtrigger.Func(
                    f"""
                    IF EXISTS (SELECT 1 FROM changed_rows c JOIN levy_levy l ON l.id = c.levy_id WHERE l.status = 'final')
                    THEN
                        RAISE EXCEPTION 'a finalized roll (padrón) cannot be changed ({operation})'
                            USING ERRCODE = 'integrity_constraint_violation';
                    END IF;
                    RETURN NULL;
                    """
                ),
            )
            for operation in ("insert", "update", "delete")
        ] + [
            # An update could move a line out of a final levy: check the old side too.
            pgtrigger.Trigger(
                name="final_roll_lines_not_moved",
                operation=pgtrigger.Update,
                when=pgtrigger.After,
                level=pgtrigger.Statement,
                referencing=pgtrigger.Referencing(old="old_rows"),
                func=pgtrigger.Func(
                    """
                    IF EXISTS (SELECT 1 FROM old_rows o JOIN levy_levy l ON l.id = o.levy_id WHERE l.status = 'final') THEN
                        RAISE EXCEPTION 'a finalized roll (padrón) cannot be changed (update)'
                            USING ERRCODE = 'integrity_constraint_violation';
                    END IF;
                    RETURN NULL;
                    """
                ),
            ),
            NO_TRUNCATE,
        ]


class RollCorrectionQuerySet(models.QuerySet):
    def numbered(self) -> RollCorrectionQuerySet:
        """¶9: each correction with ``number``, its number in its roll (1, 2, … in the order they
        were made: the ``n.º`` of the ledger entries that name it) and ``roll``, the roll's fiscal year."""
        earlier = (RollCorrection.objects.filter(roll_line__levy_id=models.OuterRef("roll_line__levy_id"),
                                                 pk__lte=models.OuterRef("pk"))
                   .order_by().values("roll_line__levy_id").annotate(n=models.Count("pk")).values("n"))
        return self.annotate(number=models.Subquery(earlier), roll=models.F("roll_line__levy__fiscal_year__label"))


class RollCorrection(models.Model):
    """A supplementary entry after finalization: references the line it corrects, with a reason and
    its own due date; billed as its own charge and reconciled apart from the original roll."""

    roll_line = models.ForeignKey(RollLine, on_delete=models.PROTECT, related_name="corrections")
    om_charge_delta = money_field(_("cambio en el cargo de O&M"))
    credit_delta = money_field(_("cambio en el crédito"))
    net_delta = money_field(_("cambio neto"))
    # ¶7: the sec. 372 percentage this correction recorded (None: the line's percentage stands).
    credit_percent = models.DecimalField(_("nuevo por ciento de crédito (sec. 372)"), max_digits=5, decimal_places=2,
                                         null=True, blank=True)
    reason = models.TextField(_("razón"))
    due_date = models.DateField(_("vence"))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = RollCorrectionQuerySet.as_manager()

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(net_delta=models.F("om_charge_delta") - models.F("credit_delta")), name="correction_net"),
        ]
        triggers = [pgtrigger.Protect(name="correction_unchanged", operation=pgtrigger.Update | pgtrigger.Delete), NO_TRUNCATE]


class ChainLink(models.Model):
    """One link of the tamper-evident chain of issued records (``billing.chain``): every final
    roll, roll correction, receipt, void, refund, bill, debt certificate, seizure notice and day
    close is appended, under a lock on its series, to the chain of its numbering series.
    ``hash = sha256(previous_hash ‖ canonical content)``, the content being the record's sorted-key
    JSON (its snapshot and its PDF's SHA-256); ``content_hash = sha256(canonical content)``.
    It lives in ``levy`` (below billing) so the worksheet can print the final roll's hash; billing
    writes it. Append-only; a day close's link also keeps the head of every series (``heads``)."""

    class Kind(models.TextChoices):
        ROLL = "roll", _("Padrón final")
        CORRECTION = "correction", _("Corrección del padrón")
        RECEIPT = "receipt", _("Recibo contributivo")
        VOID = "void", _("Anulación de pago")
        REFUND = "refund", _("Reembolso")
        BILL = "bill", _("Aviso de contribución")
        CERTIFICATE = "certificate", _("Certificación de deuda")
        SEIZURE = "seizure", _("Paso del embargo")
        DAY_CLOSE = "day_close", _("Cierre del día")

    series = models.CharField(_("serie"), max_length=60)
    position = models.PositiveIntegerField(_("posición"))
    kind = models.CharField(max_length=12, choices=Kind.choices)
    record_id = models.BigIntegerField()
    previous_hash = models.CharField(max_length=64)
    content_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)
    # day closes only: {series: [position, hash]} of every series when the day was closed
    heads = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["series", "position"]
        constraints = [
            models.UniqueConstraint(fields=["series", "position"], name="one_link_per_series_position"),
            models.UniqueConstraint(fields=["kind", "record_id"], name="one_link_per_record"),
            models.CheckConstraint(condition=Q(position__gte=1), name="chain_position_from_one"),
            models.CheckConstraint(
                condition=Q(hash__regex=r"^[0-9a-f]{64}$") & Q(previous_hash__regex=r"^[0-9a-f]{64}$")
                & Q(content_hash__regex=r"^[0-9a-f]{64}$"),
                name="chain_hashes_are_sha256",
            ),
        ]
        triggers = [pgtrigger.Protect(name="append_only", operation=pgtrigger.Update | pgtrigger.Delete), NO_TRUNCATE]
