"""Billing's web layer: one module per area with its views and forms, and one ``urls.py``.
It sits on top of the floors below it: ``rules`` → ``accounts`` → ``services``/``documents``."""
