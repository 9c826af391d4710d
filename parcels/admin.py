"""The admin's user list gets one action: reset a user's second factor (recorded in the audit
trail, like ``manage.py reset_second_factor``). django-otp's own device pages are left out so
that removing a device has only that one, recorded, path.

A user's page also edits the officer's title (``StaffProfile``), beside the first and last name
Django's user page already has: together they are what certificates and notices are signed with
(``parcels.officers.officer_signature``). The history middleware names the administrator.

A password the administrator sets here (adding a user, or changing someone else's) is a first
password: the user changes it at the next sign-in before anything else (``PasswordChangeDue``)."""

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice

from .models import StaffProfile
from .second_factor import second_factor_reset
from .services import password_change_due_set

for model in (TOTPDevice, StaticDevice):
    if admin.site.is_registered(model):
        admin.site.unregister(model)

User = get_user_model()
admin.site.unregister(User)


class StaffProfileInline(admin.StackedInline):
    model = StaffProfile
    can_delete = False
    extra = 1
    max_num = 1
    verbose_name = gettext_lazy("cargo con que firma")
    verbose_name_plural = gettext_lazy("cargo con que firma (personal)")
    fields = ["title"]


@admin.register(User)
class PortalUserAdmin(UserAdmin):
    actions = ["reset_second_factor"]
    inlines = [StaffProfileInline]
    list_display = ["username", "first_name", "last_name", "staff_title", "email", "is_active"]

    @admin.display(description=gettext_lazy("cargo"))
    def staff_title(self, user) -> str:
        profile = getattr(user, "staff_profile", None)
        return profile.title if profile is not None else ""

    def save_model(self, request, obj, form, change):
        """A user added here has a password the administrator chose: changed at the first sign-in."""
        super().save_model(request, obj, form, change)
        if not change and obj.has_usable_password():
            password_change_due_set(user=obj)

    def user_change_password(self, request, id, form_url=""):
        """A password an administrator sets for someone else is a first password again."""
        response = super().user_change_password(request, id, form_url)
        if request.method == "POST" and response.status_code == 302 and str(request.user.pk) != str(id):
            user = User.objects.filter(pk=id).first()
            if user is not None and user.has_usable_password():
                password_change_due_set(user=user)
        return response

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("staff_profile")

    @admin.action(description=gettext_lazy("Restablecer la verificación en dos pasos (la activarán otra vez al entrar)"),
                  permissions=["change"])
    def reset_second_factor(self, request, queryset):
        for user in queryset:
            second_factor_reset(acting_user=request.user, user=user, reason=_("Desde el administrador del sitio"))
        self.message_user(request, _("Verificación en dos pasos restablecida para %(n)s usuario(s).") % {"n": queryset.count()},
                          messages.SUCCESS)
