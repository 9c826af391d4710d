"""The write paths of billing, one module per topic, each importing only what lies below it
(``billing.models``, ``rules``, ``accounts``, ``wording``, ``snapshots``, ``documents``, and
``parcels``/``levy``); nothing is re-exported here, so a caller names the topic it writes to:

- ``installments``: the roll's finalization and the July/January installments it issues (¶9, ¶11, ¶12);
- ``corrections``: supplementary entries on a finalized roll and their charge or credit (¶9, ¶11);
- ``numbering``: gapless numbers of the document series and the fiscal-year row of a date;
- ``counter``: payments and receipts, voids, refunds, the day's close (¶13);
- ``bills``: bills of installments, one at a time or in background batches (¶9, ¶12);
- ``collection``: office closures, debt certificates and the seizure procedure (¶11, ¶12, ¶14);
- ``books_checks``: a recorded run of ``billing.books``' check;
- ``water``: water sold before the levy starts (¶8, sec. 374a);
- ``reminders``: courtesy e-mail reminders to landowners with a confirmed address (¶12, ¶13, ¶14; issue 19).
"""
