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


class SecondFactorMiddleware:
    """A session signed in with the password that still owes its second factor (see
    ``parcels.second_factor``) reaches only the code page, the enrolment page, sign-out and the
    language switch: anything else redirects to the code page (or to enrolment for staff who have
    no app yet), with ``?next=`` back to the page asked for. Goes after django-otp's
    ``OTPMiddleware``, which tells whether the session is verified."""

    OPEN_VIEWS = frozenset({"account:verify", "account:enrol", "logout", "set_language"})

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func: Callable, view_args: tuple, view_kwargs: dict) -> HttpResponse | None:
        from django.contrib.auth.views import redirect_to_login
        from django.urls import reverse

        from .second_factor import second_factor_enrolled, second_factor_pending

        user = request.user
        if not user.is_authenticated or request.resolver_match.view_name in self.OPEN_VIEWS:
            return None
        if not second_factor_pending(user):
            return None
        target = "account:verify" if second_factor_enrolled(user) else "account:enrol"
        return redirect_to_login(request.get_full_path(), reverse(target))
