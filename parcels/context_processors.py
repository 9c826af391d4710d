from django.http import HttpRequest

from .roles import ROLE_LABELS, user_roles


def roles(request: HttpRequest) -> dict:
    """Role flags for the navigation (``role.hacienda`` …) and the signed-in user's role labels."""
    names = user_roles(getattr(request, "user", None))
    return {
        "role": {name: name in names for name in ROLE_LABELS},
        "role_labels": [ROLE_LABELS[name] for name in ROLE_LABELS if name in names],
    }
