"""The error summary lists every error of the form with a link to its field (issue 12)."""

from __future__ import annotations

import pytest
from django.urls import reverse


@pytest.mark.django_db
def test_an_invalid_form_has_a_summary_linking_each_field(login, users):
    client = login(users["authority"])
    response = client.post(reverse("parcels:owner-create"), {"name": "", "kind": "nobody", "email": "not-an-address"})
    html = response.content.decode()
    assert response.status_code == 200
    summary = html[html.index('id="error-summary"'):html.index("</div>", html.index('id="error-summary"'))]
    for field in ("name", "kind", "email"):
        assert f'href="#id_{field}"' in summary
    assert "js/error-summary.js" in html


@pytest.mark.django_db
def test_a_page_without_errors_has_no_summary(login, users):
    html = login(users["authority"]).get(reverse("parcels:owner-create")).content.decode()
    assert "error-summary" not in html
