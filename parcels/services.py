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

from .imports import ImportError_, ParcelRow, parse_parcel_csv
from .models import Owner, OwnerAccount, OwnershipTransfer, Parcel, cuerdas_to_acres
from .roles import LANDOWNER, ROLES

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


@transaction.atomic
def owner_create(
    *, acting_user: Any, name: str, kind: str = Owner.Kind.PRIVATE, email: str = "",
    mailing_address: str = "", owner_key: str = "",
) -> Owner:
    owner = Owner(
        owner_key=owner_key or owner_key_allocate(1)[0], name=name, kind=kind, email=email,
        mailing_address=mailing_address,
    )
    owner.full_clean()
    with acting(acting_user):
        owner.save()
    return owner


@transaction.atomic
def owner_update(*, acting_user: Any, owner: Owner, **changes: Any) -> Owner:
    for name, value in changes.items():
        setattr(owner, name, value)
    owner.full_clean()
    with acting(acting_user):
        owner.save(update_fields=list(changes))
    return owner


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


@dataclass
class ImportPlan:
    """What an import would do: counts, and the writes ready to run."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    owners_created: int = 0
    owners_updated: int = 0
    errors: list[ImportError_] = field(default_factory=list)
    samples: dict[str, list[str]] = field(default_factory=lambda: {"created": [], "updated": [], "unchanged": []})
    new_owner_rows: list[ParcelRow] = field(default_factory=list, repr=False)
    changed_owners: list[Owner] = field(default_factory=list, repr=False)
    new_parcel_rows: list[ParcelRow] = field(default_factory=list, repr=False)
    changed_parcels: list[Parcel] = field(default_factory=list, repr=False)
    owners_by_key: dict[str, Owner] = field(default_factory=dict, repr=False)
    pending_owner: dict[str, str] = field(default_factory=dict, repr=False)  # parcel_id → new owner key

    def summary(self) -> dict[str, Any]:
        return {
            "created": self.created, "updated": self.updated, "unchanged": self.unchanged,
            "owners_created": self.owners_created, "owners_updated": self.owners_updated,
            "samples": self.samples,
        }


def _owner_values(row: ParcelRow, owner: Owner | None) -> dict[str, Any]:
    values = {"name": row.owner_name, "email": row.owner_email, "kind": row.owner_kind}
    if row.owner_address is not None:
        values["mailing_address"] = row.owner_address
    elif owner is None:
        values["mailing_address"] = ""
    return values


def _sample(plan: ImportPlan, what: str, parcel_id: str) -> None:
    if len(plan.samples[what]) < 20:
        plan.samples[what].append(parcel_id)


def import_plan(rows: tuple[ParcelRow, ...]) -> ImportPlan:
    """Compare the file with the registry: created, updated and unchanged parcels and owners."""
    plan = ImportPlan()
    existing = {
        parcel.parcel_id: parcel
        for parcel in Parcel.objects.select_related("owner").filter(parcel_id__in=[row.parcel_id for row in rows]).iterator(chunk_size=5000)
    }
    keys = {row.owner_id for row in rows if row.owner_id}
    plan.owners_by_key = {owner.owner_key: owner for owner in Owner.objects.filter(owner_key__in=keys)}
    for parcel in existing.values():
        plan.owners_by_key.setdefault(parcel.owner.owner_key, parcel.owner)

    # Rows that share an owner key describe one owner: they must agree on its details.
    first_by_key: dict[str, ParcelRow] = {}
    for row in rows:
        if not row.owner_id:
            continue
        first = first_by_key.setdefault(row.owner_id, row)
        if (first.owner_name, first.owner_email, first.owner_kind) != (row.owner_name, row.owner_email, row.owner_kind) or (
            row.owner_address is not None and row.owner_address != first.owner_address
        ):
            plan.errors.append(ImportError_(row.line, "owner_id", _("el dueño «%(k)s» tiene otros datos en la línea %(l)s") % {"k": row.owner_id, "l": first.line}))
    if plan.errors:
        return plan

    touched_owners: dict[str, Owner] = {}
    new_owner_keys: set[str] = set()
    for row in rows:
        parcel = existing.get(row.parcel_id)
        if row.owner_id:
            owner = plan.owners_by_key.get(row.owner_id)
        else:
            owner = parcel.owner if parcel else None
        if owner is None:
            if not row.owner_id or row.owner_id not in new_owner_keys:
                plan.new_owner_rows.append(row)
                plan.owners_created += 1
                if row.owner_id:
                    new_owner_keys.add(row.owner_id)
        else:
            values = _owner_values(row, owner)
            if any(getattr(owner, name) != value for name, value in values.items()):
                if owner.owner_key not in touched_owners:
                    plan.owners_updated += 1
                for name, value in values.items():
                    setattr(owner, name, value)
                touched_owners[owner.owner_key] = owner

        if parcel is None:
            plan.created += 1
            plan.new_parcel_rows.append(row)
            _sample(plan, "created", row.parcel_id)
            continue
        changed = False
        new_values = {
            "gravity_acres": row.gravity_acres, "pumped_acres": row.pumped_acres, "inclusion": row.inclusion,
            "water_since": row.water_since, "credit_percent": row.credit_percent,
        }
        for name, value in new_values.items():
            if getattr(parcel, name) != value:
                setattr(parcel, name, value)
                changed = True
        if parcel.area_unit != Parcel.AreaUnit.ACRE and changed:
            parcel.area_unit = Parcel.AreaUnit.ACRE
        if changed:
            parcel.gravity_area_entered = row.gravity_acres
            parcel.pumped_area_entered = row.pumped_acres
        if row.owner_id and owner is not None and parcel.owner_id != owner.pk:
            parcel.owner = owner
            changed = True
        elif row.owner_id and owner is None:
            plan.pending_owner[parcel.parcel_id] = row.owner_id  # moves to an owner this file creates
            changed = True
        if changed:
            plan.updated += 1
            plan.changed_parcels.append(parcel)
            _sample(plan, "updated", row.parcel_id)
        else:
            plan.unchanged += 1
            _sample(plan, "unchanged", row.parcel_id)
    plan.changed_owners = list(touched_owners.values())
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
    keys = owner_key_allocate(sum(1 for row in plan.new_owner_rows if not row.owner_id))
    key_iter = iter(keys)
    new_owners: list[Owner] = []
    owner_for_row: dict[int, Owner] = {}
    for row in plan.new_owner_rows:
        owner = Owner(owner_key=row.owner_id or next(key_iter), **_owner_values(row, None))
        new_owners.append(owner)
        owner_for_row[row.line] = owner
    Owner.objects.bulk_create(new_owners, batch_size=2000)
    by_key = {**plan.owners_by_key, **{owner.owner_key: owner for owner in new_owners}}
    if plan.changed_owners:
        Owner.objects.bulk_update(plan.changed_owners, ["name", "email", "kind", "mailing_address"], batch_size=2000)

    new_parcels = []
    for row in plan.new_parcel_rows:
        owner = by_key[row.owner_id] if row.owner_id else owner_for_row[row.line]
        new_parcels.append(
            Parcel(
                parcel_id=row.parcel_id, owner=owner, gravity_acres=row.gravity_acres, pumped_acres=row.pumped_acres,
                area_unit=Parcel.AreaUnit.ACRE, gravity_area_entered=row.gravity_acres,
                pumped_area_entered=row.pumped_acres, inclusion=row.inclusion, water_since=row.water_since,
                credit_percent=row.credit_percent,
            )
        )
    Parcel.objects.bulk_create(new_parcels, batch_size=2000)
    if plan.changed_parcels:
        for parcel in plan.changed_parcels:
            if parcel.parcel_id in plan.pending_owner:
                parcel.owner = by_key[plan.pending_owner[parcel.parcel_id]]
            parcel.updated_at = timezone.now()
        Parcel.objects.bulk_update(
            plan.changed_parcels,
            [*PARCEL_FIELDS, "owner", "area_unit", "gravity_area_entered", "pumped_area_entered", "updated_at"],
            batch_size=2000,
        )


# --- Users ---------------------------------------------------------------------------------


@transaction.atomic
def user_create(
    *, username: str, role: str, email: str = "", password: str | None = None, owner: Owner | None = None,
) -> AbstractBaseUser:
    """A user in exactly one role; a landowner account is linked to its owner record."""
    if role not in ROLES:
        raise ValidationError(_("Rol desconocido «%(role)s». Roles: %(roles)s") % {"role": role, "roles": ", ".join(ROLES)})
    if role == LANDOWNER and owner is None:
        raise ValidationError(_("Una cuenta de terrateniente necesita --owner (la clave del dueño)."))
    if role != LANDOWNER and owner is not None:
        raise ValidationError(_("Solo una cuenta de terrateniente se vincula a un dueño."))
    User = get_user_model()
    if User.objects.filter(username=username).exists():
        raise ValidationError(_("Ya existe el usuario «%(u)s».") % {"u": username})
    user = User(username=username, email=email)
    if password:
        from django.contrib.auth.password_validation import validate_password

        validate_password(password, user)
        user.set_password(password)
    else:
        user.set_unusable_password()
    user.full_clean()
    user.save()
    user.groups.add(Group.objects.get(name=role))
    if owner is not None:
        OwnerAccount.objects.create(user=user, owner=owner)
    return user


# --- Uploads from the page -----------------------------------------------------------------


@transaction.atomic
def import_upload_create(*, acting_user: Any, file: Any) -> Any:
    """Store an uploaded CSV and queue the job that parses it and prepares the preview."""
    from .jobs import job_enqueue
    from .models import ImportUpload

    upload = ImportUpload(original_name=file.name[:255], uploaded_by=acting_user)
    upload.file.save(file.name, file, save=False)
    upload.save()
    upload.job = job_enqueue(kind="parcel_import_parse", payload={"upload_id": upload.pk}, acting_user=acting_user)
    upload.save(update_fields=["job"])
    return upload


@transaction.atomic
def import_upload_apply(*, acting_user: Any, upload: Any) -> Any:
    """The clerk confirmed the preview: queue the job that writes the file (all or nothing)."""
    from .jobs import job_enqueue
    from .models import ImportUpload

    upload = ImportUpload.objects.select_for_update().get(pk=upload.pk)
    if upload.status != ImportUpload.Status.READY:
        raise ValidationError(_("Esta importación no está lista para confirmar."))
    upload.status = ImportUpload.Status.APPLYING
    upload.job = job_enqueue(kind="parcel_import_apply", payload={"upload_id": upload.pk}, acting_user=acting_user)
    upload.save(update_fields=["status", "job"])
    return upload
