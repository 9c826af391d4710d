"""Write paths of the parcel registry: one atomic service per action, recording the acting user.

History rows are written by PostgreSQL triggers (django-pghistory); ``_acting`` puts the acting
user into the trigger context so every event names who did it, from a page or from the shell.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

import pghistory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Group
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from .imports import ImportError_, Message, ParcelRow, parse_parcel_csv
from .models import (
    Owner,
    OwnerAccount,
    OwnershipTransfer,
    Parcel,
    PasswordChangeDue,
    ReturnedMail,
    StaffProfile,
    cuerdas_to_acres,
)
from .roles import LANDOWNER, ROLES, STAFF_ROLES

PARCEL_FIELDS = ("gravity_acres", "pumped_acres", "inclusion", "water_since", "credit_percent")


@contextlib.contextmanager
def acting(user: Any, **extra: Any) -> Iterator[None]:
    """History context: events written inside name ``user`` (and any ``extra`` facts)."""
    with pghistory.context(user=getattr(user, "pk", None), username=getattr(user, "username", None), **extra):
        yield


def owner_key_allocate(count: int) -> list[str]:
    """New stable owner keys from a database sequence (``DL-000001`` …), never reused."""
    if count <= 0:
        return []
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval('parcels_owner_key_seq') FROM generate_series(1, %s)", [count])
        return [f"DL-{value:06d}" for (value,) in cursor.fetchall()]


# What a form or a command may set on an owner besides its name (``owner_create``, ``owner_update``).
OWNER_DETAILS = (
    "kind", "email", "preferred_language", "care_of", "address_line1", "address_line2", "address_town",
    "address_state", "address_zip",
)
# The parts of the postal address: entering any of them anew is a new address (issue 19).
ADDRESS_FIELDS = ("care_of", "address_line1", "address_line2", "address_town", "address_state", "address_zip")


@transaction.atomic
def owner_create(
    *, acting_user: Any, name: str, kind: str = Owner.Kind.PRIVATE, email: str = "",
    preferred_language: str = Owner.Language.SPANISH, care_of: str = "", address_line1: str = "",
    address_line2: str = "", address_town: str = "", address_state: str = "PR", address_zip: str = "",
    mailing_address: str = "", owner_key: str = "",
) -> Owner:
    """A new owner; the address is whole (line 1, town, ZIP) or absent, checked by ``Owner.clean``."""
    owner = Owner(
        owner_key=owner_key or owner_key_allocate(1)[0], name=name, kind=kind, email=email,
        preferred_language=preferred_language, care_of=care_of, address_line1=address_line1,
        address_line2=address_line2, address_town=address_town, address_state=address_state,
        address_zip=address_zip, mailing_address=mailing_address,
        address_confirmed_on=timezone.localdate() if address_line1 else None,
    )
    owner.full_clean()
    with acting(acting_user):
        owner.save()
    return owner


@transaction.atomic
def owner_update(*, acting_user: Any, owner: Owner, **changes: Any) -> Owner:
    """Change ``name`` or any of ``OWNER_DETAILS``; the history names ``acting_user``."""
    unknown = set(changes) - {"name", "mailing_address", *OWNER_DETAILS}
    if unknown:
        raise TypeError(f"owner_update() cannot change {sorted(unknown)}")
    changes = {name: value for name, value in changes.items() if getattr(owner, name) != value} or changes
    if any(name in ADDRESS_FIELDS and getattr(owner, name) != value for name, value in changes.items()):
        # Issue 19: a new address entered by staff counts as confirmed that day and clears the
        # returned-mail flag (the post office's return was about the old one).
        changes.update(address_confirmed_on=timezone.localdate() if changes.get("address_line1", owner.address_line1) else None,
                       returned_mail=False)
    if "email" in changes and changes["email"] != owner.email:
        # Issue 19: a new e-mail address is not confirmed; bills go on paper until it is.
        changes.update(email_confirmed_at=None, delivery=Owner.Delivery.PAPER)
    for name, value in changes.items():
        setattr(owner, name, value)
    owner.full_clean()
    with acting(acting_user):
        owner.save(update_fields=list(changes))
    return owner


@transaction.atomic
def owner_address_confirm(*, acting_user: Any, owner: Owner) -> Owner:
    """Issue 19: staff confirmed the postal address on file with the owner (by phone, at the
    counter): it is dated today and the returned-mail flag clears."""
    owner = Owner.objects.select_for_update().get(pk=owner.pk)
    if not owner.has_mailing_address:
        raise ValidationError(_("El dueño no tiene dirección postal que confirmar: escriba una nueva."))
    owner.address_confirmed_on = timezone.localdate()
    owner.returned_mail = False
    with acting(acting_user):
        owner.save(update_fields=["address_confirmed_on", "returned_mail"])
    return owner


@transaction.atomic
def owner_email_set(*, acting_user: Any, owner: Owner, email: str) -> Owner:
    """Issue 19: the owner (from the portal) or staff enters an e-mail address; a new one is not
    confirmed yet, so delivery falls back to paper until the link sent to it is opened."""
    return owner_update(acting_user=acting_user, owner=Owner.objects.select_for_update().get(pk=owner.pk), email=email.strip())


@transaction.atomic
def owner_email_confirm(*, owner_id: int, email: str) -> Owner:
    """Issue 19: the confirmation link for ``email`` was opened; refused when the owner's address
    changed since the link was sent (the link confirms that address only)."""
    owner = Owner.objects.select_for_update().filter(pk=owner_id).first()
    if owner is None or not owner.email or owner.email.lower() != email.lower():
        raise ValidationError(_("El enlace no corresponde a la dirección de correo que tiene registrada."))
    if owner.email_confirmed_at is None:
        owner.email_confirmed_at = timezone.now()
        with acting(None, source="email-confirmation"):
            owner.save(update_fields=["email_confirmed_at"])
    return owner


@transaction.atomic
def owner_delivery_set(*, acting_user: Any, owner: Owner, delivery: str) -> Owner:
    """Issue 19: paper or e-mail delivery of the owner's bills; e-mail only to a confirmed address
    (the database refuses it too: ``owner_email_delivery_confirmed``)."""
    owner = Owner.objects.select_for_update().get(pk=owner.pk)
    if delivery not in Owner.Delivery.values:
        raise ValidationError(_("Forma de entrega desconocida."))
    if delivery == Owner.Delivery.EMAIL and (not owner.email or owner.email_confirmed_at is None):
        raise ValidationError(_("Confirme primero su correo electrónico: abra el enlace que le enviamos."))
    owner.delivery = delivery
    with acting(acting_user):
        owner.save(update_fields=["delivery"])
    return owner


@transaction.atomic
def returned_mail_record(*, acting_user: Any, owner: Owner, parcel: Parcel, bill_number: str = "", address: str = "",
                         note: str = "") -> ReturnedMail:
    """Issue 19: an envelope came back; the owner is flagged for a new address (the registry lists
    flagged owners) and the return is kept in the owner's history of returns."""
    returned = ReturnedMail(owner=owner, parcel=parcel, bill_number=bill_number, address=address[:300], note=note.strip()[:300],
                            recorded_by=acting_user)
    returned.full_clean()
    with acting(acting_user):
        returned.save()
        Owner.objects.filter(pk=owner.pk).update(returned_mail=True)
    owner.returned_mail = True
    return returned


def _areas(*, unit: str, gravity: Decimal, pumped: Decimal) -> dict[str, Any]:
    """Acres for the levy, and the figures as the clerk typed them in ``unit``."""
    if unit == Parcel.AreaUnit.CUERDA:
        return {
            "area_unit": unit, "gravity_area_entered": gravity, "pumped_area_entered": pumped,
            "gravity_acres": cuerdas_to_acres(gravity), "pumped_acres": cuerdas_to_acres(pumped),
        }
    return {
        "area_unit": Parcel.AreaUnit.ACRE, "gravity_area_entered": gravity, "pumped_area_entered": pumped,
        "gravity_acres": gravity, "pumped_acres": pumped,
    }


@transaction.atomic
def parcel_create(
    *, acting_user: Any, parcel_id: str, owner: Owner, area_unit: str, gravity_area: Decimal,
    pumped_area: Decimal, inclusion: str, water_since: date | None, credit_percent: Decimal,
) -> Parcel:
    parcel = Parcel(
        parcel_id=parcel_id, owner=owner, inclusion=inclusion, water_since=water_since,
        credit_percent=credit_percent, **_areas(unit=area_unit, gravity=gravity_area, pumped=pumped_area),
    )
    parcel.full_clean()
    with acting(acting_user):
        parcel.save()
    return parcel


@transaction.atomic
def parcel_update(
    *, acting_user: Any, parcel: Parcel, area_unit: str, gravity_area: Decimal, pumped_area: Decimal,
    inclusion: str, water_since: date | None, credit_percent: Decimal,
) -> Parcel:
    values = _areas(unit=area_unit, gravity=gravity_area, pumped=pumped_area)
    values.update(inclusion=inclusion, water_since=water_since, credit_percent=credit_percent)
    for name, value in values.items():
        setattr(parcel, name, value)
    parcel.full_clean()
    with acting(acting_user):
        parcel.save(update_fields=[*values, "updated_at"])
    return parcel


@transaction.atomic
def parcel_transfer(
    *, acting_user: Any, parcel: Parcel, to_owner: Owner, effective_on: date, deed_reference: str = "",
) -> OwnershipTransfer:
    """A sale. Debts stay with the parcel (¶11: the levy is a lien on the land); the new owner sees
    the parcel from ``effective_on``; the previous owner keeps the receipts already issued to them."""
    parcel = Parcel.objects.select_for_update().get(pk=parcel.pk)
    if to_owner.pk == parcel.owner_id:
        raise ValidationError(_("El predio ya pertenece a ese dueño."))
    if effective_on > timezone.localdate():
        raise ValidationError(_("La fecha del traspaso no puede ser futura."))
    last = parcel.transfers.order_by("-effective_on").first()
    if last and effective_on < last.effective_on:
        raise ValidationError(_("El traspaso no puede ser anterior al último traspaso registrado."))
    transfer = OwnershipTransfer(
        parcel=parcel, from_owner_id=parcel.owner_id, to_owner=to_owner, effective_on=effective_on,
        deed_reference=deed_reference, recorded_by=acting_user,
    )
    transfer.full_clean()
    with acting(acting_user):
        transfer.save()
        parcel.owner = to_owner
        parcel.save(update_fields=["owner", "updated_at"])
    return transfer


# --- Bulk import ---------------------------------------------------------------------------

# What the import compares and writes of an owner (``mailing_address``, the old free text, is
# left as it is: the file fills the parts).
OWNER_COLUMNS = (
    "name", "email", "kind", "preferred_language", "care_of", "address_line1", "address_line2", "address_town",
    "address_state", "address_zip",
)
# The parts of the postal address: entering any of them anew is a new address (issue 19).
ADDRESS_FIELDS = ("care_of", "address_line1", "address_line2", "address_town", "address_state", "address_zip")
NEW_OWNER = ("", "", "", "es", "", "", "", "", "PR", "")  # what an owner has before the file
PARCEL_COLUMNS = ("gravity_acres", "pumped_acres", "inclusion", "water_since", "credit_percent")


PREVIEW_LIMIT = 500  # rows of each list the stored preview keeps; the counts are always whole
ACRES = Decimal("0.0001")
PERCENT = Decimal("0.01")


@dataclass
class ImportPlan:
    """What an import would do: counts, the first rows of each kind for the preview, and the rows to write.

    Existing rows are compared as plain tuples (no model instances): the path handles 100,000
    parcels, and the writes go through COPY (``parcels.bulk``). The preview lists
    (``created_rows``, ``changes``, ``owner_changes``) hold at most ``PREVIEW_LIMIT`` entries each,
    so the summary stored on an upload stays small; values are strings as the database will hold
    them, fields by their column name (the page translates them)."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    owners_created: int = 0
    owners_updated: int = 0
    errors: list[ImportError_] = field(default_factory=list)
    created_rows: list[dict[str, str]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)  # {"parcel_id", "fields": [[field, old, new], …]}
    owner_changes: list[dict[str, Any]] = field(default_factory=list)  # {"owner_key", "name", "fields": […]}
    new_owners: dict[str, tuple] = field(default_factory=dict, repr=False)  # provisional key → owner values
    changed_owners: dict[int, tuple] = field(default_factory=dict, repr=False)  # owner pk → owner values
    new_parcels: list[tuple[ParcelRow, str]] = field(default_factory=list, repr=False)  # (row, owner ref)
    changed_parcels: list[tuple[int, ParcelRow, str]] = field(default_factory=list, repr=False)  # (pk, row, owner ref)

    def summary(self) -> dict[str, Any]:
        return {
            "created": self.created, "updated": self.updated, "unchanged": self.unchanged,
            "owners_created": self.owners_created, "owners_updated": self.owners_updated,
            "created_rows": self.created_rows, "changes": self.changes, "owner_changes": self.owner_changes,
            "preview_limit": PREVIEW_LIMIT,
        }


def _shown(value: Any, places: Decimal | None = None) -> str:
    """A value as the preview shows it: decimals at the places the database keeps, dates ISO, None empty."""
    if value is None:
        return ""
    if isinstance(value, Decimal) and places is not None:
        return str(value.quantize(places))
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _parcel_shown(values: tuple) -> tuple[str, ...]:
    gravity, pumped, inclusion, water_since, credit = values
    return (_shown(gravity, ACRES), _shown(pumped, ACRES), inclusion, _shown(water_since), _shown(credit, PERCENT))


def _owner_label(name: str, key: str) -> str:
    return f"{name} ({key})" if key else name


def _differences(columns: tuple[str, ...], before: tuple, after: tuple) -> list[list[str]]:
    return [[name, old, new] for name, old, new in zip(columns, before, after, strict=True) if old != new]


def _owner_values(row: ParcelRow, current: tuple) -> tuple:
    """The owner's ``OWNER_COLUMNS`` after the row: what the file says, and the current values of
    what it leaves out (no address columns, no c/o column, an empty language cell)."""
    _name, _email, _kind, language, care_of, *address = current
    if row.owner_address is not None:
        a = row.owner_address
        address = [a.line1, a.line2, a.town, a.state if not a.is_empty else "PR", a.zip_code]
    return (
        row.owner_name, row.owner_email, row.owner_kind, row.owner_language or language,
        row.owner_care_of if row.owner_care_of is not None else care_of, *address,
    )


def _address_whole(values: tuple) -> bool:
    """``Owner``'s ``owner_address_whole`` constraint over ``OWNER_COLUMNS`` values."""
    care_of, line1, line2, town, _state, zip_code = values[4:]
    return bool(line1 and town and zip_code) or not (care_of or line1 or line2 or town or zip_code)


def _address_not_whole(row: ParcelRow) -> ImportError_:
    column = "owner_care_of" if row.owner_care_of else "owner_address"
    return ImportError_(row.line, column, Message.of(gettext_noop(
        "el dueño quedaría con una dirección incompleta (a/c sin dirección, o sin línea 1, pueblo o código postal)"
    )))


def _address_shown(values: tuple) -> str:
    """The owner's address in the preview: the USPS block on one line (" / " between lines)."""
    from .addresses import Address, usps_block

    care_of, line1, line2, town, state, zip_code = values[4:]
    return " / ".join(usps_block(Address(line1=line1, line2=line2, town=town, state=state, zip_code=zip_code), care_of=care_of))


def owner_pk_of(ref: str) -> int | None:
    return int(ref[3:]) if ref.startswith("pk:") else None


def import_plan(rows: tuple[ParcelRow, ...]) -> ImportPlan:
    """Compare the file with the registry: created, updated and unchanged parcels and owners.

    Owner references in the plan are ``"pk:<id>"`` for existing owners, ``"key:<owner_id>"`` for
    owners the file introduces with a key, and ``"row:<line>"`` for a new owner of a new parcel."""
    plan = ImportPlan()
    # Rows that share an owner key describe one owner: they must agree on its details.
    first_by_key: dict[str, ParcelRow] = {}
    for row in rows:
        if row.owner_id:
            first = first_by_key.setdefault(row.owner_id, row)
            if (first.owner_name, first.owner_email, first.owner_kind) != (row.owner_name, row.owner_email, row.owner_kind) or (
                row.owner_address != first.owner_address or row.owner_care_of != first.owner_care_of
                or (row.owner_language or "") != (first.owner_language or "")
            ):
                plan.errors.append(ImportError_(row.line, "owner_id", Message.of(
                    gettext_noop("el dueño «%(k)s» tiene otros datos en la línea %(l)s"), k=row.owner_id, l=first.line)))
    if plan.errors:
        return plan

    # One array parameter per lookup (``= ANY(%s)``), not an IN list of 100,000 placeholders, which
    # costs seconds to build and send (issue 20: the import at 100,000 parcels).
    existing: dict[str, tuple] = {}
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT parcel_id, id, owner_id, {', '.join(quote(c) for c in PARCEL_COLUMNS)} FROM {Parcel._meta.db_table} "
            "WHERE parcel_id = ANY(%s::varchar[])",
            [[row.parcel_id for row in rows]],
        )
        for values in cursor.fetchall():
            existing[values[0]] = values[1:]
        owner_ids = sorted({value[1] for value in existing.values()})
        cursor.execute(
            f"SELECT id, owner_key, {', '.join(quote(c) for c in OWNER_COLUMNS)} FROM {Owner._meta.db_table} "
            "WHERE id = ANY(%s::bigint[]) OR owner_key = ANY(%s::varchar[])",
            [owner_ids, list(first_by_key)],
        )
        found_owners = cursor.fetchall()
    owners_by_pk: dict[int, tuple] = {}
    owner_key_by_pk: dict[int, str] = {}
    owner_pk_by_key: dict[str, int] = {}
    for pk, key, *values in found_owners:
        owners_by_pk[pk] = tuple(values)
        owner_key_by_pk[pk] = key
        owner_pk_by_key[key] = pk

    for row in rows:
        current = existing.get(row.parcel_id)
        if row.owner_id and row.owner_id in owner_pk_by_key:
            owner_ref = f"pk:{owner_pk_by_key[row.owner_id]}"
        elif row.owner_id:
            owner_ref = f"key:{row.owner_id}"
        elif current is not None:
            owner_ref = f"pk:{current[1]}"
        else:
            owner_ref = f"row:{row.line}"

        if owner_ref.startswith("pk:"):
            owner_pk = int(owner_ref[3:])
            before = owners_by_pk[owner_pk]
            after = _owner_values(row, before)
            if not _address_whole(after):
                plan.errors.append(_address_not_whole(row))
                continue
            if after != before and owner_pk not in plan.changed_owners:
                plan.changed_owners[owner_pk] = after
                plan.owners_updated += 1
                if len(plan.owner_changes) < PREVIEW_LIMIT:
                    plan.owner_changes.append({
                        "owner_key": owner_key_by_pk[owner_pk], "name": before[0],
                        "fields": _differences(OWNER_COLUMNS, before, after),
                    })
        elif owner_ref not in plan.new_owners:
            values = _owner_values(row, NEW_OWNER)
            if not _address_whole(values):
                plan.errors.append(_address_not_whole(row))
                continue
            plan.new_owners[owner_ref] = values
            plan.owners_created += 1

        new_values = (row.gravity_acres, row.pumped_acres, row.inclusion, row.water_since, row.credit_percent)
        if current is None:
            plan.created += 1
            plan.new_parcels.append((row, owner_ref))
            if len(plan.created_rows) < PREVIEW_LIMIT:
                owner_values = plan.new_owners.get(owner_ref) or plan.changed_owners.get(owner_pk_of(owner_ref)) or (
                    owners_by_pk.get(owner_pk_of(owner_ref) or 0, NEW_OWNER))
                plan.created_rows.append({
                    "parcel_id": row.parcel_id, "owner": _owner_label(row.owner_name, row.owner_id), "owner_kind": row.owner_kind,
                    "owner_address": _address_shown(owner_values), "owner_language": owner_values[3],
                    **dict(zip(PARCEL_COLUMNS, _parcel_shown(new_values), strict=True)),
                })
            continue
        pk, owner_pk, *values = current
        same_owner = owner_ref == f"pk:{owner_pk}"
        if tuple(values) == new_values and same_owner:
            plan.unchanged += 1
            continue
        plan.updated += 1
        plan.changed_parcels.append((pk, row, owner_ref))
        if len(plan.changes) < PREVIEW_LIMIT:
            fields = _differences(PARCEL_COLUMNS, _parcel_shown(tuple(values)), _parcel_shown(new_values))
            if not same_owner:
                new_key = owner_key_by_pk[int(owner_ref[3:])] if owner_ref.startswith("pk:") else row.owner_id
                fields.append(["owner", _owner_label(owners_by_pk[owner_pk][0], owner_key_by_pk[owner_pk]),
                               _owner_label(row.owner_name, new_key)])
            plan.changes.append({"parcel_id": row.parcel_id, "fields": fields})
    return plan


@dataclass(frozen=True)
class ImportResult:
    ok: bool
    errors: tuple[ImportError_, ...]
    summary: dict[str, Any]


def parcels_import(*, acting_user: Any, data: bytes, dry_run: bool = False, source: str = "") -> ImportResult:
    """Upsert parcels by ``parcel_id`` from a CSV; all or nothing (one bad row rejects the file)."""
    parsed = parse_parcel_csv(data)
    if parsed.errors:
        return ImportResult(False, parsed.errors, {})
    with transaction.atomic():
        plan = import_plan(parsed.rows)
        if plan.errors:
            return ImportResult(False, tuple(plan.errors), {})
        if not dry_run:
            with acting(acting_user, source=source or "import"):
                _apply(plan)
    return ImportResult(True, (), plan.summary())


def _apply(plan: ImportPlan) -> None:
    from .bulk import copy_insert, copy_update

    now = timezone.now()
    generated = iter(owner_key_allocate(sum(1 for ref in plan.new_owners if ref.startswith("row:"))))
    new_keys = {ref: (ref[4:] if ref.startswith("key:") else next(generated)) for ref in plan.new_owners}
    copy_insert(
        Owner, ("owner_key", *OWNER_COLUMNS, "mailing_address", "created_at"),
        ((new_keys[ref], *values, "", now) for ref, values in plan.new_owners.items()),
    )
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT owner_key, id FROM {Owner._meta.db_table} WHERE owner_key = ANY(%s::varchar[])",
                       [list(new_keys.values())])
        created_pks = dict(cursor.fetchall())
    owner_pk = {ref: created_pks[key] for ref, key in new_keys.items()}

    def resolve(ref: str) -> int:
        return int(ref[3:]) if ref.startswith("pk:") else owner_pk[ref]

    if plan.changed_owners:
        copy_update(Owner, "id", OWNER_COLUMNS, ((pk, *values) for pk, values in plan.changed_owners.items()))
    copy_insert(
        Parcel,
        ("parcel_id", "owner_id", *PARCEL_COLUMNS, "area_unit", "gravity_area_entered", "pumped_area_entered", "updated_at"),
        (
            (row.parcel_id, resolve(ref), row.gravity_acres, row.pumped_acres, row.inclusion, row.water_since,
             row.credit_percent, Parcel.AreaUnit.ACRE, row.gravity_acres, row.pumped_acres, now)
            for row, ref in plan.new_parcels
        ),
    )
    if plan.changed_parcels:
        copy_update(
            Parcel, "id",
            ("owner_id", *PARCEL_COLUMNS, "area_unit", "gravity_area_entered", "pumped_area_entered", "updated_at"),
            (
                (pk, resolve(ref), row.gravity_acres, row.pumped_acres, row.inclusion, row.water_since, row.credit_percent,
                 Parcel.AreaUnit.ACRE, row.gravity_acres, row.pumped_acres, now)
                for pk, row, ref in plan.changed_parcels
            ),
        )


# --- Users ---------------------------------------------------------------------------------


@transaction.atomic
def user_create(
    *, username: str, role: str, email: str = "", password: str | None = None, owner: Owner | None = None,
    full_name: str = "", title: str = "", password_change_due: bool = False,
) -> AbstractBaseUser:
    """A user in exactly one role; a landowner account is linked to its owner record. A staff
    user may get the full name and title (*cargo*) documents are signed with (``full_name`` is
    split at its first space into the User's first and last name). ``password_change_due``: the
    password is one an administrator chose (``create_user --password-stdin``), which the user
    changes at the first sign-in before anything else (``PasswordChangeDue``)."""
    if role not in ROLES:
        raise ValidationError(_("Rol desconocido «%(role)s». Roles: %(roles)s") % {"role": role, "roles": ", ".join(ROLES)})
    if role == LANDOWNER and owner is None:
        raise ValidationError(_("Una cuenta de terrateniente necesita --owner (la clave del dueño)."))
    if role != LANDOWNER and owner is not None:
        raise ValidationError(_("Solo una cuenta de terrateniente se vincula a un dueño."))
    User = get_user_model()
    if User.objects.filter(username=username).exists():
        raise ValidationError(_("Ya existe el usuario «%(u)s».") % {"u": username})
    if title and role not in STAFF_ROLES:
        raise ValidationError(_("Solo el personal tiene cargo; una cuenta de terrateniente no firma documentos."))
    first_name, _space, last_name = " ".join(full_name.split()).partition(" ")
    user = User(username=username, email=email, first_name=first_name, last_name=last_name)
    if password:
        from django.contrib.auth.password_validation import validate_password

        validate_password(password, user)
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.full_clean()
    user.save()
    if password and password_change_due:
        password_change_due_set(user=user)
    user.groups.add(Group.objects.get(name=role))
    if owner is not None:
        OwnerAccount.objects.create(user=user, owner=owner)
    if title:
        profile = StaffProfile(user=user, title=" ".join(title.split()))
        profile.full_clean()
        with acting(None, source="create_user"):
            profile.save()
    return user


# Set in the session at a sign-in whose password is still the administrator's (``parcels.signals``):
# ``SecondFactorMiddleware`` then opens nothing but the change of password.
PASSWORD_CHANGE_SESSION_KEY = "lajas_password_change_due"


def password_change_due_set(*, user: Any) -> None:
    """``user``'s password was set by an administrator: the next sign-in changes it first."""
    PasswordChangeDue.objects.get_or_create(user=user)


def password_change_is_due(user: Any) -> bool:
    return PasswordChangeDue.objects.filter(user_id=user.pk).exists()


@transaction.atomic
def password_change_done(*, acting_user: Any, request: Any = None) -> None:
    """``acting_user`` replaced the first password with their own: the mark goes, the access
    log keeps the event."""
    from .models import AccessEvent

    PasswordChangeDue.objects.filter(user_id=acting_user.pk).delete()
    access_event_record(acting_user=acting_user, kind=AccessEvent.Kind.PASSWORD_CHANGED, request=request)


@transaction.atomic
def staff_profile_set(*, acting_user: Any, user: Any, full_name: str | None = None, title: str | None = None) -> StaffProfile:
    """Set what ``user`` signs with: the full name (first space splits first and last name) and/or
    the title; None leaves a part as it is. The profile's history names ``acting_user``."""
    if full_name is not None:
        user.first_name, _space, user.last_name = " ".join(full_name.split()).partition(" ")
        user.full_clean()
        user.save(update_fields=["first_name", "last_name"])
    profile = StaffProfile.objects.filter(user=user).first()
    with acting(acting_user):
        if profile is None:  # one insert in the history, with the title
            profile = StaffProfile(user=user, title=" ".join((title or "").split()))
            profile.full_clean()
            profile.save()
        elif title is not None:
            profile.title = " ".join(title.split())
            profile.full_clean()
            profile.save(update_fields=["title"])
    return profile


# --- Uploads from the page -----------------------------------------------------------------


@transaction.atomic
def import_upload_create(*, acting_user: Any, file: Any) -> Any:
    """Store an uploaded CSV and queue the job that parses it and prepares the preview."""
    from .jobs import job_defer
    from .models import ImportUpload

    upload = ImportUpload(original_name=file.name[:255], uploaded_by=acting_user)
    upload.file.save(file.name, file, save=False)
    upload.save()
    upload.job = job_defer(kind="parcel_import_parse", payload={"upload_id": upload.pk}, acting_user=acting_user)
    upload.save(update_fields=["job"])
    return upload


@transaction.atomic
def import_upload_apply(*, acting_user: Any, upload: Any) -> Any:
    """The clerk confirmed the preview: queue the job that writes the file (all or nothing)."""
    from .jobs import job_defer
    from .models import ImportUpload

    upload = ImportUpload.objects.select_for_update().get(pk=upload.pk)
    if upload.status != ImportUpload.Status.READY:
        raise ValidationError(_("Esta importación no está lista para confirmar."))
    upload.status = ImportUpload.Status.APPLYING
    upload.job = job_defer(kind="parcel_import_apply", payload={"upload_id": upload.pk}, acting_user=acting_user)
    upload.save(update_fields=["status", "job"])
    return upload


# --- The access log (sign-ins, sign-outs, the second factor, refusals) ---------------------


def _request_path(request: Any) -> str:
    """The path asked for, without its query string, and with any URL token (password reset,
    portal activation) blanked: the log must never hold something that lets one sign in."""
    from django.urls import Resolver404, resolve

    path = request.path_info
    try:
        match = resolve(path)
    except Resolver404:
        return path[:500]
    token = match.kwargs.get("token")
    if token:
        path = path.replace(str(token), "…")
    return path[:500]


@transaction.atomic
def access_event_record(*, acting_user: Any, kind: str, request: Any = None, username: str = "", detail: str = "") -> Any:
    """Append one access event. ``acting_user`` is the signed-in user (None for a failed sign-in,
    whose typed ``username`` is kept instead); only the name, the client address, the path and
    ``detail`` are stored, never credentials."""
    from .models import AccessEvent
    from .network import client_ip

    user = acting_user if getattr(acting_user, "is_authenticated", False) else None
    event = AccessEvent(
        kind=kind,
        user=user,
        username=(user.get_username() if user is not None else username or "")[:150],
        client_ip=client_ip(request)[:64] if request is not None else "",
        path=_request_path(request) if request is not None else "",
        detail=detail[:200],
    )
    event.full_clean()
    event.save()
    return event
