# English pages for Puerto Rico: the same d/m/Y order, inputs and numbers as the Spanish ones
# (Django's "en" is m/d/Y, which would read 01/12/2026 as January 12), with English long dates.
from lajas_portal.formats.es_PR.formats import (  # noqa: F401  (Django reads these names from this module)
    DATE_INPUT_FORMATS,
    DATETIME_INPUT_FORMATS,
    DECIMAL_SEPARATOR,
    FIRST_DAY_OF_WEEK,
    NUMBER_GROUPING,
    SHORT_DATE_FORMAT,
    SHORT_DATETIME_FORMAT,
    THOUSAND_SEPARATOR,
)

DATE_FORMAT = "j F Y"
DATETIME_FORMAT = "j F Y, H:i"
MONTH_DAY_FORMAT = "j F"
YEAR_MONTH_FORMAT = "F Y"
