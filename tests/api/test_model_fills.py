"""Variants of a version "with model labels" (goldenset.model_fill): written once by a
manager, hashed and exported on their own, never the version's default export; through
the service, the API, the version page and export_qrels, with every permission."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from goldenset.model_fill import model_fill_rows, version_model_fill_create
from goldenset.model_labels import model_labels_import, prompt_hash_of
from goldenset.models import VersionModelFill, VersionModelLabel
from goldenset.selectors import version_label_rows
from lib.errors import ConflictError, GoldsetError
from lib.formats import ModelLabelLine
from lib.ids import natural_key
from tests.api import QRELS, SLUG, assert_error, client_for

pytestmark = pytest.mark.django_db

GRADE = prompt_hash_of("grade")
# q1/d1 is labelled by people (the model's 0 is not used); the other three fill unlabelled pairs.
MODEL = {("q1", "d1"): 0, ("q1", "d5"): 2, ("q3", "d1"): 1, ("q/2:ü", "d5"): 3}
FILLED = {pair: grade for pair, grade in MODEL.items() if pair not in QRELS}


def trec(pairs: dict) -> list[str]:
    ordered = sorted(pairs.items(), key=lambda item: (natural_key(item[0][0]), natural_key(item[0][1])))
    return [f"{q} 0 {d} {g}" for (q, d), g in ordered]


@pytest.fixture
def labelled(golden_set, version):
    records = [ModelLabelLine(n, q, d, g) for n, ((q, d), g) in enumerate(MODEL.items(), start=1)]
    model_labels_import(golden_set=golden_set, model="judge", prompt_text="grade", records=records)
    model_labels_import(golden_set=golden_set, model="judge", prompt_text="grade strictly", records=records[1:2])
    return version


@pytest.fixture
def fill(labelled, manager):
    return version_model_fill_create(version=labelled, model="judge", prompt_hash=GRADE, user=manager)


def url(version, suffix: str = "") -> str:
    return f"/api/v1/golden-sets/{SLUG}/versions/{version.number}/model-fills/{suffix}"


# --- the service ---------------------------------------------------------------------------


def test_a_variant_is_the_human_labels_with_the_models_filling_the_unlabelled_pairs(fill, labelled):
    assert list(model_fill_rows(fill)) == [_split(line) for line in trec({**QRELS, **FILLED})]
    assert (fill.human_label_count, fill.model_label_count, fill.model_relevant_count) == (6, 3, 3)
    assert fill.model_share == pytest.approx(3 / 9)


def _split(line: str) -> tuple[str, str, int]:
    q, _, d, g = line.split(" ")
    return q, d, int(g)


def test_the_version_stays_human_only_and_keeps_its_hash(labelled, manager):
    before = (labelled.content_hash, list(version_label_rows(labelled)))
    made = version_model_fill_create(version=labelled, model="judge", prompt_hash=GRADE, user=manager)
    labelled.refresh_from_db()
    assert (labelled.content_hash, list(version_label_rows(labelled))) == before
    assert made.content_hash != labelled.content_hash


def test_each_model_and_prompt_is_a_variant_with_a_hash_of_its_own(fill, labelled):
    strict = version_model_fill_create(version=labelled, model="judge", prompt_hash=prompt_hash_of("grade strictly"))
    assert strict.content_hash != fill.content_hash and strict.model_label_count == 1


def test_a_variant_made_already_or_from_no_model_labels_is_refused(fill, labelled):
    with pytest.raises(ConflictError, match=f"already has a variant with the labels of judge .*{fill.short_hash}"):
        version_model_fill_create(version=labelled, model="judge", prompt_hash=GRADE)
    with pytest.raises(GoldsetError, match="has no model labels from 'nobody'"):
        version_model_fill_create(version=labelled, model="nobody", prompt_hash=GRADE)
    assert VersionModelFill.objects.count() == 1


def test_a_variant_and_its_labels_cannot_be_changed_or_deleted(fill):
    with pytest.raises(GoldsetError):
        fill.save()
    with pytest.raises(GoldsetError):
        fill.delete()
    with pytest.raises(GoldsetError):
        VersionModelLabel.objects.filter(fill=fill).first().save()


# --- the API ---------------------------------------------------------------------------------


def test_a_write_token_adds_a_variant_and_a_read_token_lists_and_downloads_it(labelled, token, golden_set):
    made = client_for(token("write", golden_set)).post(url(labelled), {"model": "judge", "prompt_hash": GRADE}, format="json")
    assert made.status_code == 201
    body = made.json()
    assert body["variant"] == "with model labels" and body["version_hash"] == labelled.content_hash
    assert (body["model_label_count"], body["human_label_count"]) == (3, 6) and body["model_share"] == pytest.approx(1 / 3)
    reader = client_for(token("read", golden_set))
    assert [row["id"] for row in reader.get(url(labelled)).json()] == [body["id"]]
    qrels = reader.get(url(labelled, f"{body['id']}/qrels"))
    assert qrels.status_code == 200 and qrels["ETag"] == f'"{body["content_hash"]}"'
    assert b"".join(qrels.streaming_content).decode().splitlines() == trec({**QRELS, **FILLED})
    # The version's own qrels hold no model label.
    own = reader.get(f"/api/v1/golden-sets/{SLUG}/versions/{labelled.number}/qrels")
    assert b"".join(own.streaming_content).decode().splitlines() == trec(QRELS)


def test_a_variant_made_twice_is_a_409_and_a_bad_prompt_hash_a_400(fill, labelled, token, golden_set):
    client = client_for(token("write", golden_set))
    assert_error(client.post(url(labelled), {"model": "judge", "prompt_hash": GRADE}, format="json"), 409)
    assert_error(client.post(url(labelled), {"model": "judge", "prompt_hash": "abc"}, format="json"), 400)


def test_only_a_manager_adds_a_variant(labelled, token, golden_set, adjudicator):
    data = {"model": "judge", "prompt_hash": GRADE}
    assert_error(client_for(token("read", golden_set)).post(url(labelled), data, format="json"), 403)
    assert_error(client_for(token("write", owner=adjudicator)).post(url(labelled), data, format="json"), 403)
    assert not VersionModelFill.objects.exists()


def test_no_one_outside_the_set_reads_its_variants(fill, labelled, token, other_set, make_user):
    from api.services import api_token_create

    stranger = make_user("stranger")
    _, secret = api_token_create(owner=stranger, scope="read")
    for client in (client_for(token("read", other_set)), client_for(secret)):
        assert_error(client.get(url(labelled)), 404)
        assert_error(client.get(url(labelled, f"{fill.pk}/qrels")), 404)
    assert client_for().get(url(labelled)).status_code in (401, 403)


def test_an_unknown_variant_is_a_404(labelled, token, golden_set):
    assert_error(client_for(token("read", golden_set)).get(url(labelled, "999/qrels")), 404)


# --- the version page and the command -------------------------------------------------------


def test_the_version_page_shows_a_variant_as_model_filled_with_its_share_and_its_own_downloads(client, fill, labelled, manager):
    client.force_login(manager)
    body = client.get(reverse("version", args=[SLUG, labelled.number])).content.decode()
    assert "Variants with model labels" in body and "33% model labels" in body and fill.short_hash in body
    assert reverse("version_model_fill_export", args=[SLUG, labelled.number, fill.pk, "trec"]) in body
    export = client.get(reverse("version_model_fill_export", args=[SLUG, labelled.number, fill.pk, "trec"]))
    assert b"".join(export.streaming_content).decode().splitlines() == trec({**QRELS, **FILLED})
    assert "with-model-labels" in export["Content-Disposition"]


def test_a_manager_adds_a_variant_from_the_version_page(client, labelled, manager):
    client.force_login(manager)
    response = client.post(reverse("version_model_fill_start", args=[SLUG, labelled.number]), {"source": f"{GRADE} judge"})
    assert response.status_code == 302 and response["Location"].endswith("#model-fills")
    assert VersionModelFill.objects.get().model_label_count == 3
    again = client.post(reverse("version_model_fill_start", args=[SLUG, labelled.number]), {"source": f"{GRADE} judge"}, follow=True)
    assert "already has a variant" in again.content.decode() and VersionModelFill.objects.count() == 1


def test_a_reader_downloads_a_variant_but_cannot_add_one_and_a_stranger_sees_neither(client, fill, labelled, adjudicator, make_user):
    client.force_login(adjudicator)
    assert client.get(reverse("version_model_fill_export", args=[SLUG, labelled.number, fill.pk, "json"])).status_code == 200
    page = client.get(reverse("version", args=[SLUG, labelled.number])).content.decode()
    assert "Add a variant with these model labels" not in page
    response = client.post(reverse("version_model_fill_start", args=[SLUG, labelled.number]), {"source": f"{GRADE} judge"})
    assert response.status_code == 404 and VersionModelFill.objects.count() == 1
    client.force_login(make_user("stranger"))
    assert client.get(reverse("version_model_fill_export", args=[SLUG, labelled.number, fill.pk, "trec"])).status_code == 404
    client.logout()
    assert client.get(reverse("version_model_fill_export", args=[SLUG, labelled.number, fill.pk, "trec"])).status_code == 302


def test_the_start_url_takes_no_get_and_an_unknown_variant_is_not_found(client, fill, labelled, manager):
    client.force_login(manager)
    assert client.get(reverse("version_model_fill_start", args=[SLUG, labelled.number])).status_code == 405
    assert client.get(reverse("version_model_fill_export", args=[SLUG, labelled.number, 999, "trec"])).status_code == 404


def test_export_qrels_writes_a_variant_only_when_asked(fill, labelled, tmp_path):
    err = StringIO()
    call_command("export_qrels", SLUG, "--model-fill", str(fill.pk), "--output", str(tmp_path / "filled.txt"), stderr=err)
    assert (tmp_path / "filled.txt").read_text(encoding="utf-8").splitlines() == trec({**QRELS, **FILLED})
    assert "with model labels (3 of them judge's, 33.3%" in err.getvalue()
    call_command("export_qrels", SLUG, "--output", str(tmp_path / "human.txt"), stderr=StringIO())
    assert (tmp_path / "human.txt").read_text(encoding="utf-8").splitlines() == trec(QRELS)
    with pytest.raises(CommandError, match="has no variant 999"):
        call_command("export_qrels", SLUG, "--model-fill", "999")
