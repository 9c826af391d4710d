from django.http import HttpRequest

from .roles import ROLE_LABELS, user_roles
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
    }
