from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

# Every page is served from our own origin only: no CDN, no outside fonts, scripts or images.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'self'; object-src 'none'"
)


class SecurityHeadersMiddleware:
    """Adds the Content-Security-Policy and Permissions-Policy headers to every response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
        return response


def client_ip(request: HttpRequest) -> str:
    """The client's address for login throttling (django-axes) behind ``AXES_PROXY_COUNT`` proxies.

    Each trusted proxy appends the address it saw to X-Forwarded-For, so the client is the entry
    ``AXES_PROXY_COUNT`` places from the right; with no proxy the socket's address is used."""
    from django.conf import settings

    proxies = settings.AXES_IPWARE_PROXY_COUNT
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if proxies and len(forwarded) >= proxies:
        return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR", "")


class AccessAuditMiddleware:
    """Records the refusals of the role check (403) and of the access doors (404 on an object that
    is not the user's) in the access log, then lets Django answer them as usual."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> None:
        from .access import NotYours
        from .models import AccessEvent
        from .roles import RoleDenied
        from .services import access_event_record

        if isinstance(exception, RoleDenied):
            access_event_record(acting_user=request.user, kind=AccessEvent.Kind.FORBIDDEN, request=request,
                                detail="roles: " + ", ".join(exception.roles))
        elif isinstance(exception, NotYours):
            access_event_record(acting_user=request.user, kind=AccessEvent.Kind.NOT_FOUND, request=request,
                                detail=exception.detail)
