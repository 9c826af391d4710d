"""The test data builders write through the services, so test data obeys the same rules as real data."""

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from pghistory.models import Events

from parcels.models import Parcel
from tests.factories import PASSWORD, OwnerFactory, ParcelFactory, UserFactory


@pytest.mark.django_db
def test_a_parcel_from_the_factory_has_its_owner_and_history_like_one_from_the_page():
    parcel = ParcelFactory(gravity_area=Decimal("42.5"))
    assert Parcel.objects.get(pk=parcel.pk).gravity_acres == Decimal("42.5000")
    assert Events.objects.tracks(parcel).values_list("pgh_label", flat=True).get() == "insert"
    assert Events.objects.tracks(parcel.owner).values_list("pgh_label", flat=True).get() == "insert"


@pytest.mark.django_db
def test_the_factories_refuse_what_the_services_refuse():
    with pytest.raises(ValidationError):
        ParcelFactory(gravity_area=Decimal("-1"))
    owner = OwnerFactory()
    with pytest.raises(ValidationError):
        UserFactory(role="landowner")  # a landowner account needs its owner record
    landowner = UserFactory(role="landowner", owner=owner)
    assert landowner.check_password(PASSWORD) and landowner.owner_account.owner == owner
    with pytest.raises(TypeError):
        ParcelFactory.build()
