from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.utils import translation
from django.utils.translation import gettext as _

from .network import client_ip  # noqa: F401  (its old home: billing and tests import it from here)

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


class RejectNulMiddleware:
    """A NUL byte in the path, the query string, a cookie or a posted form field answers 400 before
    any view.

    PostgreSQL refuses NUL in text ("A string literal cannot contain NUL"), so such a value reaching
    a query was a 500 (and an error report) for what is only a malformed request. Uploaded files
    are not looked at: they are read as bytes and checked by their own forms."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if self._has_nul(request):
            # Before the session and LocaleMiddleware: the language from the cookie or the browser.
            with translation.override(translation.get_language_from_request(request)):
                message = _("La dirección o el formulario contiene un carácter no permitido.")
            return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
        return self.get_response(request)

    @staticmethod
    def _has_nul(request: HttpRequest) -> bool:
        if "\x00" in request.path or "\x00" in request.path_info:
            return True
        if any("\x00" in key or any("\x00" in value for value in values) for key, values in request.GET.lists()):
            return True
        if any("\x00" in key or "\x00" in value for key, value in request.COOKIES.items()):  # the session key is looked up
            return True
        if request.method == "POST" and request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            return any("\x00" in key or any("\x00" in value for value in values) for key, values in request.POST.lists())
        return False


class SecondFactorMiddleware:
    """A session signed in with a password an administrator set (``PasswordChangeDue``, flagged in
    the session at the sign-in) reaches only the change of password, sign-out and the language
    switch, before anything else, the second factor included (issue 17 §6).

    Then a session that still owes its second factor (see ``parcels.second_factor``) reaches only
    the code page, the enrolment page, sign-out and the language switch: anything else redirects
    to the code page (or to enrolment for staff who have no app yet), with ``?next=`` back to the
    page asked for. Goes after django-otp's ``OTPMiddleware``, which tells whether the session is
    verified."""

    PASSWORD_VIEWS = frozenset({"account:password-change", "logout", "set_language"})
    OPEN_VIEWS = frozenset({"account:verify", "account:enrol", "logout", "set_language"})

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func: Callable, view_args: tuple, view_kwargs: dict) -> HttpResponse | None:
        from django.contrib.auth.views import redirect_to_login
        from django.urls import reverse

        from .second_factor import second_factor_enrolled, second_factor_pending
        from .services import PASSWORD_CHANGE_SESSION_KEY

        user = request.user
        if not user.is_authenticated:
            return None
        view_name = request.resolver_match.view_name
        if request.session.get(PASSWORD_CHANGE_SESSION_KEY):
            if view_name in self.PASSWORD_VIEWS:
                return None
            return redirect_to_login(request.get_full_path(), reverse("account:password-change"))
        if view_name in self.OPEN_VIEWS or not second_factor_pending(user):
            return None
        target = "account:verify" if second_factor_enrolled(user) else "account:enrol"
        return redirect_to_login(request.get_full_path(), reverse(target))


class PrivatePagesMiddleware:
    """Every response to a signed-in session (its pages, documents and exports) is sent with
    ``Cache-Control: no-store, private``: no shared cache or proxy keeps it, and the browser does
    not keep a copy on disk for whoever uses the computer next (issue 17 §6)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            response.headers["Cache-Control"] = "no-store, private"
        return response


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
