"""Billing models come with the billing issue."""
