"""The only way a view gets a parcel for a user: staff see any, a landowner only their own (404)."""

from django.http import Http404
from django.shortcuts import get_object_or_404

from .models import Parcel
from .roles import LANDOWNER, STAFF_ROLES, has_role


class NotYours(Http404):
    """The access doors' 404: a landowner (or a user of no role) asked for an object that is not
    theirs, or does not exist; a plain 404 to the user, recorded in the access log."""

    def __init__(self, kind: str, pk: object) -> None:
        super().__init__()
        self.detail = f"{kind} {pk}"


def owner_ids_for_user(user) -> list[int]:
    account = getattr(user, "owner_account", None)
    return [account.owner_id] if account else []


def get_parcel_for_user(user, pk: int) -> Parcel:
    queryset = Parcel.objects.select_related("owner")
    if has_role(user, *STAFF_ROLES):
        return get_object_or_404(queryset, pk=pk)
    if has_role(user, LANDOWNER):
        parcel = queryset.filter(pk=pk, owner_id__in=owner_ids_for_user(user)).first()
        if parcel is not None:
            return parcel
    raise NotYours("parcel", pk)
