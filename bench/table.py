"""The issue's table (issue 20): one row per figure, "what | now | target | met?", collected by
the benchmarks as they run and printed by ``run_all`` (``make bench``) after the detailed figures."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = []


def issue_row(what: str, now: str, target: str, met: bool | None) -> None:
    """Record a row; ``met`` None: no verdict (a figure without a target)."""
    ROWS.append((what, now, target, "" if met is None else ("yes" if met else "NO")))
    print(f"[table] {what} | {now} | {target} | {ROWS[-1][3]}", flush=True)


def markdown() -> str:
    lines = ["| what | now | target | met? |", "|---|---|---|---|"]
    lines += [f"| {what} | {now} | {target} | {met} |" for what, now, target, met in ROWS]
    return "\n".join(lines)
