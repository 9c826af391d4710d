"""Issue the July and January installments of a finalized roll of 100,000 parcels
(``billing.services.installments.installments_issue``, which ``roll_finalize`` calls), timed apart
from the compute. No target in the issue; the roll's (under 15 s on 2 cores) is the yardstick.

The district is the one of ``bench_registry_and_roll`` (same CSV, same estimates). The roll is
finalized with the installment step held back, so the finalization and the installments are timed
separately; then the installments are issued again to time the idempotent no-op."""

from __future__ import annotations

import os
import time
from datetime import date
from unittest import mock

from common import certified_estimates, registry_csv, setup_fresh_database, timed

PARCELS = int(os.environ.get("BENCH_PARCELS", "100000"))
TARGET_SECONDS = 15.0


def main() -> list[tuple[str, str]]:
    setup_fresh_database()

    from billing.models import Charge, LedgerEntry
    from billing.services import installments
    from billing.services.installments import roll_finalize
    from levy.services import levy_compute
    from parcels.services import parcels_import, user_create

    results: list[tuple[str, str]] = []
    result = parcels_import(acting_user=None, data=registry_csv(PARCELS), source="bench installments")
    assert result.ok, result.errors[:3]
    _, hacienda = certified_estimates("2026-2027")
    finalizer = user_create(username="bench_hac2", role="hacienda", password=None)  # not the certifier
    setup: list[tuple[str, str]] = []
    with timed(f"(setup) compute the roll of {PARCELS:,} parcels", setup):
        levy = levy_compute(acting_user=hacienda, fiscal_year="2026-2027")
    # roll_finalize (billing.services.installments) issues the installments as it finalizes: hold them back.
    with mock.patch.object(installments, "installments_issue", return_value=0):
        with timed(f"finalize the roll of {PARCELS:,} parcels (without installments)", results):
            levy = roll_finalize(acting_user=finalizer, fiscal_year="2026-2027", today=date(2026, 6, 30))
    assert not Charge.objects.exists()

    start = time.perf_counter()
    issued = installments.installments_issue(acting_user=finalizer, levy=levy)
    seconds = time.perf_counter() - start
    ledger = LedgerEntry.objects.count()
    print(f"installments: {seconds:.2f} s for {issued:,} charges and {ledger:,} ledger entries "
          f"({levy.parcels_levied:,} parcels levied)", flush=True)
    flag = "" if seconds <= TARGET_SECONDS else f"; MISSED the {TARGET_SECONDS:.0f} s yardstick"
    results.append((f"issue the installments of {PARCELS:,} finalized parcels",
                    f"{seconds:.2f} s ({issued:,} charges + {ledger:,} ledger entries{flag})"))
    with timed("issue them again (idempotent: nothing new)", results):
        again = installments.installments_issue(acting_user=finalizer, levy=levy)
    assert again == 0 and LedgerEntry.objects.count() == ledger
    return results


if __name__ == "__main__":
    main()
