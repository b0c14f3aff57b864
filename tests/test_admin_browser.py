"""The admin's own pages in a real browser, at 390 and 1280 px, with axe-core: its markup is
Django's, the forms on it are ours (the inlines, the widgets and the fields we add), and an
operator with a screen reader uses them as much as anyone (issue 30 item 10: the golden set's
change form had 8 critical findings, its membership inline's selects unlabelled).
"""

import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from goldenset.models import Corpus, GoldenSet, Membership, Page
from tests.browser import login
from tests.goldset.test_every_page_browser import _axe_source, _check
from tests.support import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_admin_forms_of_a_golden_set_pass_axe_at_both_widths(browser_page, live_server):
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")
    manager = get_user_model().objects.create_user("mira", password="pw-mira")
    golden_set = factories.sliced_set("adminset", manager=manager)
    assert Membership.objects.filter(golden_set=golden_set).exists()  # the inline has a row to label
    page = Page.objects.filter(corpus=golden_set.corpus).first()
    urls = [
        reverse("admin:index"),
        reverse("admin:goldenset_goldenset_changelist"),
        reverse("admin:goldenset_goldenset_change", args=[golden_set.pk]),
        reverse("admin:goldenset_goldenset_add"),
        reverse("admin:goldenset_corpus_change", args=[Corpus.objects.get(golden_sets=golden_set).pk]),
        reverse("admin:goldenset_page_change", args=[page.pk]),
    ]
    shots = os.environ.get("GOLDSET_SCREENSHOTS")
    shots_dir = Path(shots) if shots else None
    login(browser_page, live_server, admin.username, "pw-root")
    axe = _axe_source()
    problems = []
    for url in urls:
        problems += _check(browser_page, url, axe, shots_dir, "admin")
    assert GoldenSet.objects.count() == 1
    assert problems == [], "\n".join(problems)
