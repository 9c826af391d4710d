"""The portal's roles as groups with their permissions, and the owner-key sequence."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

# Model permissions per role (the admin uses them; pages check the role itself).
ROLE_PERMISSIONS = {
    "authority": ["add_owner", "change_owner", "view_owner", "add_parcel", "change_parcel", "view_parcel",
                  "add_ownershiptransfer", "view_ownershiptransfer"],
    "hacienda": ["view_owner", "view_parcel", "view_ownershiptransfer"],
    "collector": ["view_owner", "view_parcel"],
    "supervisor": ["view_owner", "view_parcel"],
    "landowner": [],
    "auditor": ["view_owner", "view_parcel", "view_ownershiptransfer"],
}


def create_roles(apps, schema_editor):
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, codenames in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        group.permissions.add(*Permission.objects.filter(content_type__app_label="parcels", codename__in=codenames))


class Migration(migrations.Migration):
    dependencies = [
        ("parcels", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.RunSQL(
            "CREATE SEQUENCE IF NOT EXISTS parcels_owner_key_seq START 1",
            "DROP SEQUENCE IF EXISTS parcels_owner_key_seq",
        ),
        migrations.RunPython(create_roles, migrations.RunPython.noop),
    ]
