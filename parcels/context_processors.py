from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from .roles import LANDOWNER, ROLE_LABELS, user_roles
from .second_factor import second_factor_pending


def roles(request: HttpRequest) -> dict:
    """Role flags for the navigation (``role.hacienda`` …), the signed-in user's role labels, and
    whether the session still owes its second factor."""
    user = getattr(request, "user", None)
    names = user_roles(user)
    return {
        # signed in with the password, the code still owed: the header shows no menu
        "second_factor_pending": user is not None and second_factor_pending(user),
        "role": {name: name in names for name in ROLE_LABELS},
        "role_labels": [ROLE_LABELS[name] for name in ROLE_LABELS if name in names],
        # the header names the person, not the login: read only on pages that show it
        "user_display_name": SimpleLazyObject(lambda: user_display_name(user, landowner=LANDOWNER in names)),
    }


def user_display_name(user, *, landowner: bool) -> str:
    """Who is signed in, as a person reads it: a landowner's owner (the name on the bills), else
    the user's full name (staff), else the username. Staff pages make no query for it."""
    if user is None or not user.is_authenticated:
        return ""
    account = getattr(user, "owner_account", None) if landowner else None
    if account is not None:
        return account.owner.name
    return user.get_full_name() or user.get_username()
