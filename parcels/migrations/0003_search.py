"""Search as people type (parcels.search): PostgreSQL's unaccent and pg_trgm extensions (both
trusted, so the database owner may create them), two IMMUTABLE functions that fold text the same
way on both sides of a comparison, and GIN trigram indexes on what the registry and the counter
search: owner names and cadastre numbers."""

import django.contrib.postgres.indexes
from django.contrib.postgres.operations import TrigramExtension, UnaccentExtension
from django.db import migrations

import parcels.search

# unaccent() is STABLE (its dictionary could change); naming the dictionary makes the wrapper
# safe to declare IMMUTABLE, which an index expression needs.
FUNCTIONS = """
CREATE OR REPLACE FUNCTION lajas_fold(value text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN lower(public.unaccent('public.unaccent'::regdictionary, value));
CREATE OR REPLACE FUNCTION lajas_code(value text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN regexp_replace(upper(public.unaccent('public.unaccent'::regdictionary, value)), '[^A-Z0-9]', '', 'g');
"""


class Migration(migrations.Migration):

    dependencies = [
        ('parcels', '0002_roles_and_owner_key_sequence'),
    ]

    operations = [
        UnaccentExtension(),
        TrigramExtension(),
        migrations.RunSQL(FUNCTIONS, "DROP FUNCTION lajas_fold(text); DROP FUNCTION lajas_code(text);"),
        migrations.AddIndex(
            model_name='owner',
            index=django.contrib.postgres.indexes.GinIndex(django.contrib.postgres.indexes.OpClass(parcels.search.Fold('name'), name='gin_trgm_ops'), name='owner_name_search'),
        ),
        migrations.AddIndex(
            model_name='parcel',
            index=django.contrib.postgres.indexes.GinIndex(django.contrib.postgres.indexes.OpClass(parcels.search.CodeKey('parcel_id'), name='gin_trgm_ops'), name='parcel_code_search'),
        ),
    ]
