"""The parcel registry (*registro de predios*).

Design:
- ``Owner`` is a person or body with a stable key (``owner_key``); two owners with the same name
  are different owners. Public owners (Commonwealth and its instrumentalities) pay like every
  other owner (¶4), so ``kind`` is informational only.
- ``Parcel`` carries what the levy needs (¶5, ¶8, ¶9, ¶10, ¶7): areas in acres (4 decimals) by
  irrigation kind, inclusion in the District, the date water was first received or offered and
  the credit percentage fixed under sec. 372. The area unit the clerk typed (acres or cuerdas)
  and the figures as typed are kept beside the acres.
- ``OwnershipTransfer`` is a dated sale: the debt stays with the parcel (¶11, lien), the new owner
  sees the parcel from the transfer date.
- History: every insert, update and delete of these tables is copied by PostgreSQL triggers
  (django-pghistory) into event tables, with the acting user from the request or service
  context, so bulk updates cannot bypass it.
- ``Owner`` keeps the language its documents are issued in and a mailing address in parts (lines,
  town, state, ZIP or ZIP+4, c/o; ``parcels.addresses``), whole or absent, checked by the database;
  ``Owner.address_block`` is the USPS block a window envelope shows.
- Mailing (issue 19): ``Owner`` keeps the day its address was last entered or confirmed by staff
  (``address_confirmed_on``), a *returned mail* flag (``returned_mail``) with its history in
  ``ReturnedMail`` (one append-only row per envelope the post office sent back; the flag clears
  when a new address is entered or the address is confirmed), and how the owner wants bills
  delivered (``delivery``: paper, or e-mail once ``email_confirmed_at`` is set; the database
  refuses e-mail delivery to an unconfirmed address).
- ``StaffProfile`` holds an officer's title (*cargo*); with the User's first and last name it is
  what certificates and notices are signed with (``parcels.officers``).
- ``SecondFactorReset`` records an administrator removing a user's second-factor devices
  (django-otp TOTP and recovery codes) so they enrol again; its history row is what the audit
  page shows, with who did it and when. The devices themselves are django-otp's tables.
- ``AccessEvent`` is the append-only log of sign-ins (success, failure, lockout), sign-outs, the
  second factor's events (wrong code, throttled, recovery code used, a session signed out while
  still owing the code, an app enrolled), the first password changed, and refusals (403 from a role check, 404 from the access doors on someone else's object); database
  triggers refuse UPDATE and DELETE, and it never holds a password, a token or a query string.
- ``PasswordChangeDue`` marks a password an administrator set: the first sign-in changes it first.
- ``Job`` records a long run (imports, rolls, bulk printing) done by a procrastinate worker
  (``manage.py run_worker``), with the progress its page shows (``parcels.jobs``).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pghistory
import pgtrigger
from django.conf import settings
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from .addresses import PR_ZIP_MESSAGE, PR_ZIP_PATTERN, STATES, ZIP_FORMAT_MESSAGE, ZIP_PATTERN, Address, usps_block, zip_problem
from .database import APPEND_ONLY, NO_TRUNCATE
from .lookups import CodeKey, Fold

ACRE_PLACES = Decimal("0.0001")
SQUARE_METRES_PER_CUERDA = Decimal("3930.395625")
SQUARE_METRES_PER_ACRE = Decimal("4046.8564224")


def cuerdas_to_acres(cuerdas: Decimal) -> Decimal:
    """Exact conversion (1 cuerda = 3,930.395625 m²; 1 acre = 4,046.8564224 m²), half-up to 4 places."""
    return (cuerdas * SQUARE_METRES_PER_CUERDA / SQUARE_METRES_PER_ACRE).quantize(
        ACRE_PLACES, rounding=ROUND_HALF_UP
    )


class Owner(models.Model):
    """A person or body that owns parcels, with the language its documents are issued in and the
    mailing address they are sent to (parts kept apart so the block prints as USPS reads it)."""

    class Kind(models.TextChoices):
        PRIVATE = "private", _("Privado")
        PUBLIC = "public", _("Público (ELA o instrumentalidad)")

    class Language(models.TextChoices):
        SPANISH = "es", pgettext_lazy("idioma de un dueño", "Español")
        ENGLISH = "en", pgettext_lazy("idioma de un dueño", "Inglés")

    class Delivery(models.TextChoices):
        PAPER = "paper", pgettext_lazy("entrega de los avisos", "Papel, por correo postal")
        EMAIL = "email", pgettext_lazy("entrega de los avisos", "Correo electrónico")

    STATE_CHOICES = [(code, code) for code in STATES]

    owner_key = models.CharField(_("clave del dueño"), max_length=40, unique=True)
    name = models.CharField(_("nombre"), max_length=200)
    email = models.EmailField(_("correo electrónico"), blank=True)
    # Issue 19: when the owner confirmed ``email`` (the link sent to it was opened); e-mail bills and
    # reminders go only to a confirmed address. Changing the address clears it.
    email_confirmed_at = models.DateTimeField(_("correo confirmado el"), null=True, blank=True)
    preferred_language = models.CharField(
        _("idioma de los documentos"), max_length=2, choices=Language.choices, default=Language.SPANISH,
        db_default=Language.SPANISH,
    )
    care_of = models.CharField(
        _("a/c (al cuidado de)"), max_length=100, blank=True, default="", db_default="",
        help_text=_("Opcional: la persona o entidad que recibe el correo por el dueño."),
    )
    address_line1 = models.CharField(
        _("dirección, línea 1"), max_length=100, blank=True, default="", db_default="",
        help_text=_("Calle y número, urbanización, carretera y km, HC o apartado (por ejemplo HC 1 Box 123)."),
    )
    address_line2 = models.CharField(
        _("dirección, línea 2"), max_length=100, blank=True, default="", db_default="", help_text=_("Opcional: barrio, edificio, apartamento."),
    )
    address_town = models.CharField(_("pueblo (municipio)"), max_length=60, blank=True, default="", db_default="")
    address_state = models.CharField(
        _("estado"), max_length=2, choices=STATE_CHOICES, default="PR", db_default="PR",
        help_text=_("PR; otra abreviatura postal para un dueño que vive fuera."),
    )
    address_zip = models.CharField(
        _("código postal (ZIP)"), max_length=10, blank=True, default="", db_default="", help_text=_("00667 o 00667-1234."),
    )
    # The free text the registry held before the address had parts (migration
    # 0009_owner_language_and_address): kept as it was, shown beside the parts; no longer edited.
    mailing_address = models.TextField(_("dirección postal anterior (texto libre)"), blank=True)
    kind = models.CharField(_("tipo"), max_length=10, choices=Kind.choices, default=Kind.PRIVATE)
    # Issue 19, mailing: the day staff last entered or confirmed the postal address; whether mail
    # sent to it came back (history: ``ReturnedMail``); paper or e-mail delivery of bills.
    address_confirmed_on = models.DateField(_("dirección confirmada el"), null=True, blank=True)
    returned_mail = models.BooleanField(_("correo devuelto"), default=False, db_default=False)
    delivery = models.CharField(
        _("entrega de los avisos"), max_length=5, choices=Delivery.choices, default=Delivery.PAPER, db_default=Delivery.PAPER,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "owner_key"]
        verbose_name = _("dueño")
        verbose_name_plural = _("dueños")
        indexes = [
            models.Index(fields=["name"]),
            # Accent- and case-insensitive name search (parcels.search; migration 0003_search).
            GinIndex(OpClass(Fold("name"), name="gin_trgm_ops"), name="owner_name_search"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(preferred_language__in=["es", "en"]), name="owner_language_valid"),
            # Issue 19: bills go by e-mail only to an address the owner confirmed (the link was opened).
            models.CheckConstraint(
                condition=Q(delivery="paper") | (Q(delivery="email") & ~Q(email="") & Q(email_confirmed_at__isnull=False)),
                name="owner_email_delivery_confirmed",
                violation_error_message=_("Los avisos se envían por correo electrónico solo a una dirección confirmada."),
            ),
            models.CheckConstraint(condition=Q(address_state__in=list(STATES)), name="owner_state_valid"),
            models.CheckConstraint(
                condition=Q(address_zip="") | Q(address_zip__regex=ZIP_PATTERN), name="owner_zip_format",
                violation_error_message=ZIP_FORMAT_MESSAGE,
            ),
            models.CheckConstraint(
                condition=~Q(address_state="PR") | Q(address_zip="") | Q(address_zip__regex=PR_ZIP_PATTERN),
                name="owner_pr_zip", violation_error_message=PR_ZIP_MESSAGE,
            ),
            # An address is whole or absent: line 1, town and ZIP together (what a bill's window needs).
            models.CheckConstraint(
                condition=(Q(address_line1="") & Q(address_line2="") & Q(address_town="") & Q(address_zip="")
                           & Q(care_of=""))
                | (~Q(address_line1="") & ~Q(address_town="") & ~Q(address_zip="")),
                name="owner_address_whole", violation_error_message=_(
                    "Una dirección postal necesita la línea 1, el pueblo y el código postal (ZIP)."
                ),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.owner_key})"

    def clean(self) -> None:
        """Each missing part of a started address named on its own field, in Spanish."""
        errors: dict[str, str] = {}
        problem = zip_problem(self.address_zip, self.address_state)
        if problem:
            errors["address_zip"] = problem
        if not self.address.is_empty or self.care_of:
            required = {
                "address_line1": _("Escriba la línea 1 de la dirección (calle y número, HC o apartado)."),
                "address_town": _("Escriba el pueblo."),
                "address_zip": _("Escriba el código postal (ZIP), por ejemplo 00667."),
            }
            for name, message in required.items():
                if not getattr(self, name).strip() and name not in errors:
                    errors[name] = message
        if errors:
            raise ValidationError(errors)

    @property
    def address(self) -> Address:
        return Address(line1=self.address_line1, line2=self.address_line2, town=self.address_town,
                       state=self.address_state, zip_code=self.address_zip)

    @property
    def has_mailing_address(self) -> bool:
        return bool(self.address_line1 and self.address_town and self.address_zip)

    @property
    def address_block(self) -> tuple[str, ...]:
        """The address as USPS reads it, without the name: ``("C/O …", "HC 1 BOX 123", "LAJAS PR 00667")``."""
        return usps_block(self.address, care_of=self.care_of)

    def mailing_block(self) -> tuple[str, ...]:
        """The whole block for an envelope window: the owner's name in capitals, then ``address_block``."""
        return usps_block(self.address, care_of=self.care_of, name=self.name)


class Parcel(models.Model):
    class Inclusion(models.TextChoices):
        TRIAL = "trial", _("Período de prueba")
        PERMANENT = "permanent", _("Permanente")
        EXCLUDED = "excluded", _("Excluido")

    class AreaUnit(models.TextChoices):
        ACRE = "acre", _("acres")
        CUERDA = "cuerda", _("cuerdas")

    parcel_id = models.CharField(_("número de catastro"), max_length=40, unique=True)
    owner = models.ForeignKey(Owner, on_delete=models.PROTECT, related_name="parcels", verbose_name=_("dueño"))
    gravity_acres = models.DecimalField(_("acres por gravedad"), max_digits=12, decimal_places=4)
    pumped_acres = models.DecimalField(_("acres por bombeo"), max_digits=12, decimal_places=4)
    area_unit = models.CharField(
        _("unidad tecleada"), max_length=6, choices=AreaUnit.choices, default=AreaUnit.ACRE
    )
    gravity_area_entered = models.DecimalField(
        _("área por gravedad (como se tecleó)"), max_digits=12, decimal_places=4, null=True, blank=True
    )
    pumped_area_entered = models.DecimalField(
        _("área por bombeo (como se tecleó)"), max_digits=12, decimal_places=4, null=True, blank=True
    )
    inclusion = models.CharField(_("inclusión"), max_length=10, choices=Inclusion.choices)
    water_since = models.DateField(_("agua recibida u ofrecida desde"), null=True, blank=True)
    credit_percent = models.DecimalField(
        _("crédito por derechos de agua cedidos (%)"), max_digits=5, decimal_places=2, default=Decimal("0")
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["parcel_id"]
        verbose_name = _("predio")
        verbose_name_plural = _("predios")
        constraints = [
            models.CheckConstraint(
                condition=Q(gravity_acres__gte=0) & Q(pumped_acres__gte=0), name="parcel_acres_not_negative"
            ),
            models.CheckConstraint(
                condition=Q(gravity_acres__gt=0) | Q(pumped_acres__gt=0), name="parcel_has_area"
            ),
            models.CheckConstraint(
                condition=Q(credit_percent__gte=0) & Q(credit_percent__lte=100), name="parcel_credit_0_100"
            ),
            models.CheckConstraint(
                condition=Q(inclusion__in=["trial", "permanent", "excluded"]), name="parcel_inclusion_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["inclusion", "parcel_id"]),
            models.Index(fields=["owner", "parcel_id"]),
            models.Index(fields=["water_since"]),
            # Cadastre numbers found with or without prefix and dashes (parcels.search).
            GinIndex(OpClass(CodeKey("parcel_id"), name="gin_trgm_ops"), name="parcel_code_search"),
        ]

    def __str__(self) -> str:
        return self.parcel_id

    @property
    def equivalent_acres(self) -> Decimal:
        """¶5: gravity acres plus half the acres the landowner's pumps water."""
        return self.gravity_acres + self.pumped_acres * Decimal("0.5")

    @property
    def irrigation_kind(self) -> str:
        if self.gravity_acres and self.pumped_acres:
            return "mixed"
        return "gravity" if self.gravity_acres else "pumped"


class ReturnedMail(models.Model):
    """Issue 19: an envelope the post office sent back, recorded by a clerk: the owner it was
    addressed to, the parcel, and the bill number when the clerk gave one (``parcels`` knows no
    bills, so the number is kept as printed). Recording one flags the owner (``Owner.returned_mail``)
    for a new address; the rows stay as the history of returns (append-only)."""

    owner = models.ForeignKey(Owner, on_delete=models.PROTECT, related_name="returned_mails", verbose_name=_("dueño"))
    parcel = models.ForeignKey("Parcel", on_delete=models.PROTECT, related_name="+", verbose_name=_("predio"))
    bill_number = models.CharField(_("número de aviso"), max_length=24, blank=True)
    address = models.CharField(_("dirección a la que se envió"), max_length=300, blank=True)
    note = models.CharField(_("nota"), max_length=300, blank=True)
    recorded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    recorded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-recorded_at", "-id"]
        verbose_name = _("correo devuelto")
        verbose_name_plural = _("correo devuelto")
        triggers = APPEND_ONLY


class OwnershipTransfer(models.Model):
    """A sale: from ``effective_on`` the parcel is the new owner's; debts stay with the parcel (¶11)."""

    parcel = models.ForeignKey(Parcel, on_delete=models.PROTECT, related_name="transfers")
    from_owner = models.ForeignKey(Owner, on_delete=models.PROTECT, related_name="+")
    to_owner = models.ForeignKey(Owner, on_delete=models.PROTECT, related_name="+")
    effective_on = models.DateField(_("fecha de traspaso"))
    deed_reference = models.CharField(_("escritura"), max_length=120, blank=True)
    recorded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-effective_on", "-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(from_owner=models.F("to_owner")), name="transfer_changes_owner"),
        ]


class OwnerAccount(models.Model):
    """Links a landowner's login to the owner record whose parcels they may see."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="owner_account")
    owner = models.ForeignKey(Owner, on_delete=models.PROTECT, related_name="accounts")


class StaffProfile(models.Model):
    """What an officer signs with besides the User's first and last name: the title (*cargo*)
    printed under the name on certificates and notices (``parcels.officers.officer_signature``)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="staff_profile", verbose_name=_("usuario"),
    )
    title = models.CharField(
        _("cargo"), max_length=120, blank=True,
        help_text=_("Como se imprime bajo la firma, por ejemplo «Colector de Rentas Internas»."),
    )

    class Meta:
        verbose_name = _("perfil de funcionario")
        verbose_name_plural = _("perfiles de funcionario")

    def __str__(self) -> str:
        return f"{self.user} — {self.title}"


class SecondFactorReset(models.Model):
    """An administrator removed ``user``'s second-factor devices; the user enrols again at the
    next sign-in. ``username`` is copied so the record reads the same if the user is renamed."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    username = models.CharField(max_length=150)
    devices_removed = models.PositiveSmallIntegerField()
    reason = models.CharField(_("razón"), max_length=200)
    reset_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # A record of what an administrator did: never changed, never deleted, never emptied.
        triggers = APPEND_ONLY


class PasswordChangeDue(models.Model):
    """``user``'s password was set by an administrator (``create_user --password-stdin``, the site
    administration): the first sign-in changes it before anything else, the second factor included
    (issue 17 §6: whoever else knew that first password must not get further than the sign-in).
    The row is removed when the user sets their own password."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
                                related_name="password_change_due")
    set_at = models.DateTimeField(auto_now_add=True)


class Job(models.Model):
    """Our record of one long run (``parcels.jobs``): the procrastinate job that does the work,
    and what the page that waits on it shows (status, progress, result or error, who asked).

    Records with the same ``kind`` and ``key`` (a roll's fiscal year, a bill batch's semester)
    run one at a time: the database refuses a second one while the first is queued or running."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("En cola")
        RUNNING = "running", _("En proceso")
        DONE = "done", _("Terminado")
        FAILED = "failed", _("Falló")

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    kind = models.CharField(max_length=40)
    key = models.CharField(max_length=80, null=True, blank=True)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    procrastinate_job_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "created_at"])]
        constraints = [
            models.UniqueConstraint(fields=["kind", "key"], condition=Q(status__in=["queued", "running"], key__isnull=False),
                                    name="one_active_job_per_kind_and_key"),
        ]

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        return min(100, self.progress * 100 // self.total) if self.total else 0


class ImportUpload(models.Model):
    """A parcel CSV uploaded from the page: parsed by a job, previewed, then applied on confirm."""

    class Status(models.TextChoices):
        PARSING = "parsing", _("Analizando")
        REJECTED = "rejected", _("Rechazado")
        READY = "ready", _("Listo para confirmar")
        APPLYING = "applying", _("Aplicando")
        APPLIED = "applied", _("Aplicado")

    file = models.FileField(upload_to="imports/%Y/%m/")
    original_name = models.CharField(max_length=255)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PARSING)
    errors = models.JSONField(default=list, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    job = models.ForeignKey(Job, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    uploaded_at = models.DateTimeField(auto_now_add=True)


class AccessEvent(models.Model):
    """One sign-in, sign-out or refusal, as it happened; rows are never changed nor deleted."""

    class Kind(models.TextChoices):
        LOGIN = "login", _("Inicio de sesión")
        LOGIN_FAILED = "login_failed", _("Inicio de sesión fallido")
        LOCKOUT = "lockout", _("Bloqueo por intentos fallidos")
        LOGOUT = "logout", _("Cierre de sesión")
        FORBIDDEN = "forbidden", _("Denegado por rol (403)")
        NOT_FOUND = "not_found", _("Objeto ajeno o inexistente (404)")
        OTP_FAILED = "otp_failed", _("Código de verificación incorrecto")
        OTP_THROTTLED = "otp_throttled", _("Código de verificación en espera (demasiados intentos)")
        OTP_RECOVERY = "otp_recovery", _("Entrada con código de recuperación")
        OTP_ABANDONED = "otp_abandoned", _("Sesión dejada en la contraseña (sin código)")
        OTP_ENROLLED = "otp_enrolled", _("Aplicación de autenticación activada")
        PASSWORD_CHANGED = "password_changed", _("Contraseña inicial cambiada")

    at = models.DateTimeField(default=timezone.now, db_index=True)  # timestamptz: stored in UTC
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # The user is kept as a bare id (no foreign key): the log outlives a deleted user and never blocks
    # deleting one; ``username`` is the name at the time, or the name typed for a failed sign-in.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.DO_NOTHING, db_constraint=False, null=True, blank=True, related_name="+",
    )
    username = models.CharField(max_length=150, blank=True, db_index=True)
    client_ip = models.CharField(max_length=64, blank=True)
    path = models.CharField(max_length=500, blank=True)
    detail = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["kind", "at"])]
        triggers = APPEND_ONLY


# Trigger-based history: who changed what and when, for every write path including bulk ones.
# Statement-level triggers (transition tables) write one INSERT … SELECT per statement, and the
# context (acting user, source) is denormalized into each event row: a 100,000-row import costs
# one history statement, not 100,000 trigger calls and context upserts.
HISTORY = {
    "context_field": pghistory.ContextJSONField(),
    "context_id_field": pghistory.ContextUUIDField(),
    "level": pgtrigger.Statement,
}
# The history itself is never emptied (parcels.database.NO_TRUNCATE).
pghistory.track(
    pghistory.InsertEvent(), pghistory.UpdateEvent(), pghistory.DeleteEvent(), model_name="OwnerEvent",
    meta={"triggers": [NO_TRUNCATE]}, **HISTORY,
)(Owner)
pghistory.track(
    pghistory.InsertEvent(), pghistory.UpdateEvent(), pghistory.DeleteEvent(),
    exclude=["updated_at"], model_name="ParcelEvent", meta={"triggers": [NO_TRUNCATE]}, **HISTORY,
)(Parcel)
pghistory.track(
    pghistory.InsertEvent(), model_name="OwnershipTransferEvent", meta={"triggers": [NO_TRUNCATE]}, **HISTORY
)(OwnershipTransfer)
pghistory.track(
    pghistory.InsertEvent(), pghistory.UpdateEvent(), pghistory.DeleteEvent(), model_name="StaffProfileEvent",
    meta={"triggers": [NO_TRUNCATE]}, **HISTORY,
)(StaffProfile)
pghistory.track(
    pghistory.InsertEvent(), model_name="SecondFactorResetEvent", meta={"triggers": [NO_TRUNCATE]}, **HISTORY
)(SecondFactorReset)
