"""GoldsetClient's calls for the operations added to cover the whole API, against a live
server: reference answers, a version's diff and its publish job, a run's standing, and the
lists of live endpoints, oracle experiments and model labels (empty on a new set)."""

import pytest

from goldset_client import GoldsetAPIError
from tests.api import RUN, SLUG

QUERY = "q/2:ü"  # a slash and a colon: the query id must be quoted into the path


def test_a_reference_answer_is_set_read_published_diffed_and_removed(client):
    assert client.set_reference_answer(SLUG, QUERY, "Paris", aliases=["paris"]) == {
        "answer": "Paris",
        "aliases": ["paris"],
        "key_facts": [],
    }
    assert client.reference_answer(SLUG, QUERY)["answer"] == "Paris"
    job = client.publish(SLUG, note="an answer")
    assert client.publish_job(SLUG, job["id"])["version"]["number"] == 2
    diff = client.version_diff(SLUG, 1, 2)
    assert (diff["from_version"], diff["to_version"], diff["answers_added"]) == (1, 2, [QUERY])
    assert diff["counts"]["answers_added"] == 1 and diff["counts"]["pairs_added"] == 0
    client.delete_reference_answer(SLUG, QUERY)
    with pytest.raises(GoldsetAPIError) as missing:
        client.reference_answer(SLUG, QUERY)
    assert missing.value.status == 404


def test_a_run_is_archived_and_brought_back_and_a_complete_run_cannot_be_marked_complete(client):
    run = client.upload_run(SLUG, RUN.encode(), system="bm25", stage="first_stage")
    assert client.archive_run(SLUG, run["id"])["archived"] is True
    assert client.unarchive_run(SLUG, run["id"])["archived"] is False
    with pytest.raises(GoldsetAPIError) as refused:
        client.mark_run_complete(SLUG, run["id"])
    assert refused.value.status == 422  # not a partial run
    with pytest.raises(GoldsetAPIError) as refused:
        client.mark_run_partial(SLUG, run["id"])
    assert refused.value.status == 409
    # Both changes are in the audit trail, newest first, each naming its run; the refusals are not.
    records = client.audit_records(SLUG, action="run")
    assert [r["action"] for r in records] == ["run.unarchive", "run.archive"]
    assert {r["object"]["id"] for r in records} == {str(run["id"])}


def test_an_organisations_trail_is_read_by_its_admins_token(make_client, token, golden_set, manager):
    from goldenset.models import Organisation
    from goldenset.teams import organisation_member_set

    organisation_member_set(organisation=Organisation.objects.get(slug="default"), user=manager, role="admin")
    records = make_client(token("read")).organisation_audit_records("default", action="organisation")
    assert [(r["action"], r["golden_set"], r["object"]["label"]) for r in records] == [("organisation.member", "", "manager")]
    with pytest.raises(GoldsetAPIError) as refused:
        make_client(token("read", golden_set)).organisation_audit_records("default")
    assert refused.value.status == 404


def test_a_new_sets_endpoints_experiments_and_model_labels_are_empty_lists(client):
    assert client.endpoints(SLUG) == []
    assert client.oracle_experiments(SLUG) == []
    assert client.model_fills(SLUG, 1) == []
    assert client.model_label_calibration(SLUG) == {"sources": [], "calibration": None}


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.endpoint(SLUG, "no such endpoint"),
        lambda c: c.endpoint_probes(SLUG, "no such endpoint", limit=3),
        lambda c: c.endpoint_index_probes(SLUG, "no such endpoint"),
        lambda c: c.endpoint_night(SLUG, "no such endpoint", 1),
        lambda c: c.run_upload(SLUG, 999999),
        lambda c: c.oracle_experiment(SLUG, 999999),
        lambda c: c.oracle_experiment_answers(SLUG, 999999),
        lambda c: c.model_fill_qrels(SLUG, 1, 999999),
        lambda c: c.run_endpoint(SLUG, "no such endpoint"),
        lambda c: c.continue_oracle_experiment(SLUG, 999999, budget_dollars="1.50"),
        lambda c: c.depth_ask(SLUG, 999999),
    ],
)
def test_reads_of_what_does_not_exist_are_the_apis_404(client, call):
    with pytest.raises(GoldsetAPIError) as missing:
        call(client)
    assert missing.value.status == 404, missing.value


def test_writes_with_bad_input_are_refused_naming_the_field(client):
    """The body reaches the API: its refusal names what is wrong in it."""
    with pytest.raises(GoldsetAPIError) as refused:
        client.add_model_fill(SLUG, 1, model="no-such-model", prompt_hash="0" * 12)
    assert refused.value.status == 400 and "prompt_hash" in refused.value.message, refused.value
    run = client.upload_run(SLUG, RUN.encode(), system="bm25", stage="first_stage")
    with pytest.raises(GoldsetAPIError) as refused:
        client.start_oracle_experiment(SLUG, run_id=run["id"], generator="no-such-generator", budget_dollars="-1")
    assert refused.value.status == 422
    assert any(p.startswith("generator: ") for p in refused.value.problems), refused.value
    assert any(p.startswith("budget: a positive number of dollars") for p in refused.value.problems), refused.value
    with pytest.raises(GoldsetAPIError) as refused:
        client.ask_endpoint_at_depth(SLUG, "no such endpoint", 0)
    assert any(p.startswith("endpoint: ") for p in refused.value.problems), refused.value
    assert any(p.startswith("depth: ") for p in refused.value.problems), refused.value
