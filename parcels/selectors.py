from django.db.models import Q, QuerySet, TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from pghistory.models import Events

from .filters import ParcelFilter
from .models import AccessEvent, Owner, Parcel
from .search import owners_matching, parcels_matching, words


def parcel_list(*, params) -> ParcelFilter:
    queryset = Parcel.objects.select_related("owner").order_by("parcel_id")
    return ParcelFilter(params, queryset=queryset)


def parcel_history(*, parcel: Parcel) -> QuerySet:
    return Events.objects.tracks(parcel).order_by("-pgh_created_at")


def _keys(rows: QuerySet) -> QuerySet:
    """The primary keys of ``rows`` as text, as the history stores the object it tracks."""
    return rows.annotate(key=Cast("pk", TextField())).values("key")


def _events_about(query: str) -> Q:
    """History rows about the parcels and owners a person would find by typing ``query`` in the
    registry search (names whatever their accents, "Munoz" for "Muñoz"; cadastre numbers with or
    without prefix and dashes; owner keys): the parcels' and owners' own rows and the sales of
    those parcels, to or from those owners."""
    parcels = _keys(parcels_matching(Parcel.objects.all(), query))
    owners = _keys(owners_matching(Owner.objects.all(), query))
    return (
        Q(pgh_obj_model="parcels.Parcel", pgh_obj_id__in=parcels)
        | Q(pgh_obj_model="parcels.Owner", pgh_obj_id__in=owners)
        | Q(pgh_obj_model="parcels.OwnershipTransfer")
        & (Q(sale_parcel__in=parcels) | Q(sale_from__in=owners) | Q(sale_to__in=owners))
    )


def audit_events(*, user: str = "", model: str = "", since=None, until=None, query: str = "") -> QuerySet:
    """Every history row across the registry, newest first, filtered by who, what and when, and
    by owner or parcel (``query``, as the registry search reads it)."""
    events = Events.objects.order_by("-pgh_created_at", "-pgh_id")
    if words(query):
        events = events.annotate(
            sale_parcel=KeyTextTransform("parcel_id", "pgh_data"), sale_from=KeyTextTransform("from_owner_id", "pgh_data"),
            sale_to=KeyTextTransform("to_owner_id", "pgh_data"),
        ).filter(_events_about(query))
    if user:
        events = events.filter(pgh_context__username=user)
    if model:
        events = events.filter(pgh_model=model)
    if since:
        events = events.filter(pgh_created_at__date__gte=since)
    if until:
        events = events.filter(pgh_created_at__date__lte=until)
    return events


def access_events(*, user: str = "", kind: str = "", since=None, until=None) -> QuerySet:
    """The access log newest first, filtered by user name (the signed-in or the typed one), kind
    and day (days in the portal's time zone, as for the history)."""
    events = AccessEvent.objects.order_by("-at", "-id")
    if user:
        events = events.filter(username=user)
    if kind:
        events = events.filter(kind=kind)
    if since:
        events = events.filter(at__date__gte=since)
    if until:
        events = events.filter(at__date__lte=until)
    return events
