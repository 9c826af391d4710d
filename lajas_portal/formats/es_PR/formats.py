# Puerto Rico: amounts as 1,234.56 and dates as d/m/Y (unlike Django's generic "es").
DATE_FORMAT = r"j \d\e F \d\e Y"
SHORT_DATE_FORMAT = "d/m/Y"
DATETIME_FORMAT = r"j \d\e F \d\e Y H:i"
SHORT_DATETIME_FORMAT = "d/m/Y H:i"
MONTH_DAY_FORMAT = r"j \d\e F"
YEAR_MONTH_FORMAT = r"F \d\e Y"
FIRST_DAY_OF_WEEK = 0  # Sunday
DATE_INPUT_FORMATS = ["%d/%m/%Y", "%Y-%m-%d"]
DATETIME_INPUT_FORMATS = ["%d/%m/%Y %H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"]
DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
