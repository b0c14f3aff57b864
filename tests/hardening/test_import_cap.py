"""Finding 5, second half: 10^6 labels sent as JSON answered 500 at gunicorn's 30 s timeout
although every judgment was committed. One request takes at most MAX_LABELS_PER_REQUEST
labels (a request at the cap finishes well inside the deployment's 120 s timeout:
bench/api_import.py); more are refused at once, saying how to split them, nothing written."""

import pytest

from api.views import judgments
from goldenset.models import Judgment
from tests.api import SLUG, assert_error, client_for

pytestmark = pytest.mark.django_db
URL = f"/api/v1/golden-sets/{SLUG}/judgments/"


@pytest.fixture
def small_cap(monkeypatch):
    monkeypatch.setattr(judgments, "MAX_LABELS_PER_REQUEST", 3)
    # DRF builds each serializer's fields anew from their arguments: the cap goes in there.
    field = judgments.JudgmentImportApi.InputSerializer._declared_fields["labels"]
    monkeypatch.setitem(field._kwargs, "max_length", 3)


def test_more_labels_than_a_request_takes_are_refused_before_anything_is_written(token, golden_set, small_cap):
    writer = client_for(token("write", golden_set))
    before = Judgment.objects.count()
    labels = [{"query_id": "q1", "doc_id": doc, "grade": 1} for doc in ("d1", "d2", "d3", "d5")]
    error = assert_error(writer.post(URL, {"labels": labels}, format="json"), 400, "invalid")
    assert error["problems"][0].startswith("labels: send at most 200,000 labels a request")
    error = assert_error(writer.post(URL, "".join(f"q1 0 {d} 1\n" for d in ("d1", "d2", "d3", "d5")), content_type="text/plain"), 422)
    assert "send at most 3 a request" in error["message"]
    assert Judgment.objects.count() == before


def test_the_deployment_gives_a_request_at_the_cap_120_seconds():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert '"--timeout", "120"' in (root / "Dockerfile").read_text()
    assert "--timeout 120" in (root / "docker-compose.yml").read_text()
    assert judgments.MAX_LABELS_PER_REQUEST == 200_000
