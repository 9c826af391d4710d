from django.db.models import QuerySet
from pghistory.models import Events

from .filters import ParcelFilter
from .models import AccessEvent, Parcel


def parcel_list(*, params) -> ParcelFilter:
    queryset = Parcel.objects.select_related("owner").order_by("parcel_id")
    return ParcelFilter(params, queryset=queryset)


def parcel_history(*, parcel: Parcel) -> QuerySet:
    return Events.objects.tracks(parcel).order_by("-pgh_created_at")


def audit_events(*, user: str = "", model: str = "", since=None, until=None) -> QuerySet:
    """Every history row across the registry, newest first, filtered by who, what and when."""
    events = Events.objects.order_by("-pgh_created_at", "-pgh_id")
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
