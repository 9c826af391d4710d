"""The client's address, for every throttle and for the access log. A module of its own, importing
nothing of the app: the middleware, the services and the settings (django-axes) all read it."""

from __future__ import annotations

import ipaddress

from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str:
    """The client's address for every throttle (django-axes' sign-in lockout, password resets).

    Behind deploy/nginx.conf (``BEHIND_PROXY``) it is the ``X-Real-IP`` header, which that nginx
    always overwrites with the address it saw (a trusted load balancer's report of it through the
    realip module, else the socket's), so nothing a client writes in any header reaches it. Without
    a proxy it is the socket's address. X-Forwarded-For is never read: its entries are the client's."""
    from django.conf import settings

    if settings.BEHIND_PROXY:
        seen = request.META.get("HTTP_X_REAL_IP", "").strip()
        try:
            return str(ipaddress.ip_address(seen))
        except ValueError:  # absent or not an address: the request did not come through nginx
            pass
    return request.META.get("REMOTE_ADDR", "")
