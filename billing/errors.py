"""The one refusal of billing: a one-line reason for the counter page or the command line."""


class BillingError(Exception):
    """A refusal with a one-line reason for the counter page or the command line."""
