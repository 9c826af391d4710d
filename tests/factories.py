"""Test data builders (factory-boy) that write through the services, as the pages do: history
triggers, ``full_clean()`` and the database constraints apply to test data too.

Each factory's ``_create`` calls the one service of its entity instead of ``Model.objects.create``;
``build()`` is not offered (an unsaved owner or parcel is never what a test here needs)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import factory
from django.contrib.auth import get_user_model

from parcels.models import Owner, Parcel
from parcels.services import owner_create, parcel_create, user_create

PASSWORD = "Correct-Horse-Battery-9"


class _ThroughService(factory.Factory):
    class Meta:
        abstract = True

    @classmethod
    def _build(cls, model_class: type, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{cls.__name__} builds through its service only: call it, or .create()")


class OwnerFactory(_ThroughService):
    class Meta:
        model = Owner

    name = factory.Sequence(lambda n: f"Dueño de prueba {n}")
    owner_key = factory.Sequence(lambda n: f"OWN-T{n:04d}")
    email = ""
    kind = Owner.Kind.PRIVATE

    @classmethod
    def _create(cls, model_class: type, *args: Any, **kwargs: Any) -> Owner:
        return owner_create(acting_user=kwargs.pop("acting_user", None), **kwargs)


class ParcelFactory(_ThroughService):
    """A permanent parcel of 10 gravity acres with water since 2000 and no credit, unless told."""

    class Meta:
        model = Parcel

    parcel_id = factory.Sequence(lambda n: f"LAJ-T{n:04d}")
    owner = factory.SubFactory(OwnerFactory)
    area_unit = "acre"
    gravity_area = Decimal("10")
    pumped_area = Decimal("0")
    inclusion = "permanent"
    water_since = date(2000, 1, 1)
    credit_percent = Decimal("0")

    @classmethod
    def _create(cls, model_class: type, *args: Any, **kwargs: Any) -> Parcel:
        return parcel_create(acting_user=kwargs.pop("acting_user", None), **kwargs)


class UserFactory(_ThroughService):
    """A user in one role (``authority`` unless told) with ``PASSWORD``; a landowner needs ``owner``."""

    class Meta:
        model = get_user_model()

    username = factory.Sequence(lambda n: f"u_test{n}")
    role = "authority"
    password = PASSWORD
    owner = None
    # Staff sign certificates and notices (``parcels.officers.officer_signature``): a name and a title.
    full_name = factory.LazyAttribute(lambda o: "" if o.role == "landowner" else f"Oficial {o.username.replace('_', ' ').title()} Prueba")
    title = factory.LazyAttribute(lambda o: "" if o.role == "landowner" else "Oficial de Pruebas")

    @classmethod
    def _create(cls, model_class: type, *args: Any, **kwargs: Any) -> Any:
        return user_create(**kwargs)
