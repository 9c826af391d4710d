"""¶13: the Collector's offices' printed details (address, phone, hours, ways to pay), edited by
Hacienda or a supervisor. Every change is kept in ``OfficeEvent`` (pghistory) with the acting
user; bills already issued keep the details they froze (``BillSnapshot.office``)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from parcels.roles import HACIENDA, SUPERVISOR, has_role
from parcels.services import acting

from ..errors import BillingError
from ..models import Office

OFFICE_EDITORS = (HACIENDA, SUPERVISOR)
OFFICE_FIELDS = ("name", "address_line1", "address_line2", "town", "zip_code", "phone", "hours_es", "hours_en",
                 "ways_to_pay_es", "ways_to_pay_en", "on_bills")


@transaction.atomic
def office_update(*, acting_user: Any, office: Office, **changes: Any) -> Office:
    """Change an office's printed details; ``on_bills`` moves the mark from any other office
    (one office is named on the bills Hacienda issues). Returns the office as saved."""
    if not has_role(acting_user, *OFFICE_EDITORS):
        raise BillingError(_("Solo Hacienda o un supervisor cambian los datos de una oficina."))
    unknown = sorted(set(changes) - set(OFFICE_FIELDS))
    if unknown:
        raise BillingError(_("Campo desconocido: %(f)s.") % {"f": ", ".join(unknown)})
    office = Office.objects.select_for_update().get(pk=office.pk)
    for name, value in changes.items():
        setattr(office, name, value.strip() if isinstance(value, str) else value)
    office.full_clean(validate_constraints=False)
    changed = [name for name in changes]
    with acting(acting_user, source="office_update"):
        if office.on_bills:
            Office.objects.filter(on_bills=True).exclude(pk=office.pk).update(on_bills=False)
        office.save(update_fields=changed)
    return office
