"""Run a management command the way a shell would see it: exit code, stdout, stderr."""

from __future__ import annotations

import io

from django.core.management import call_command


def run_command(name: str, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(name, *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, out.getvalue(), err.getvalue()
