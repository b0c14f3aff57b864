"""The local judge: the packaged all-MiniLM-L6-v2 grading a pool's pairs on the worker, as a
judge job of kind `local` (labeling.model_labels.local_judge, lib.minilm).

Tests that run the model skip, with the reason, where the optional model extra is not
installed; the tests of what happens without it run everywhere.
"""

from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from goldenset.model_labels import model_labels_import, model_sources
from goldenset.models import Judgment, Membership, ModelJudgment, ModelPrompt
from goldenset.services import judgment_record, membership_grant, version_publish
from labeling.model_labels.jobs import judge_job_run, judge_job_submit
from labeling.model_labels.local_judge import (
    DEFAULT_THRESHOLDS_0_3,
    Thresholds,
    config_problem,
    config_read,
    config_text,
    default_config,
)
from labeling.model_labels.selectors import calibration_report
from labeling.models import JudgeJob
from labeling.pools.services import pool_build
from lib import minilm
from lib.errors import GoldsetError
from lib.formats import JsonRecord, ModelLabelLine
from tests.support import factories

pytestmark = pytest.mark.django_db
needs_model = pytest.mark.skipif(bool(minilm.install_problem()), reason=str(minilm.install_problem()))

PAGES = {
    "reset": ("Reset your password", "Open Settings, choose Security and press Reset password; we e-mail you a link."),
    "html": ("Password help", "<p>Forgot your <b>password</b>? Use the <a href='/reset'>reset link</a> on the sign-in page.</p>"),
    "refund": ("Refunds", "A refund reaches your card within 14 days of the return being received."),
    "trucks": ("Truck maintenance", "Change the oil of the fleet's trucks every 20,000 km and check the brakes."),
}
QUERIES = {"q-pw": "how do I reset my password", "q-refund": "how long does a refund take"}


@pytest.fixture
def pooled(owner):
    """Two queries over four pages, every page pooled for each: eight unlabelled pairs."""
    pages = [JsonRecord(line=n, id=d, title=t, text=x, metadata={}) for n, (d, (t, x)) in enumerate(PAGES.items(), 1)]
    queries = [JsonRecord(line=n, id=q, text=t, metadata={}) for n, (q, t) in enumerate(QUERIES.items(), 1)]
    golden_set = factories.golden_set("local", manager=owner, pages=pages, queries=queries, qrels={("q-pw", "reset"): 3})
    run = factories.run(golden_set, "bm25", {"q-pw": ["html", "refund", "trucks"], "q-refund": list(PAGES)})
    pool = pool_build(golden_set=golden_set, runs=[run], depth=4, strategy="depth").pool
    assert pool.pair_count == 7
    return golden_set, pool


def local_job(golden_set, pool, config=None, **options):
    return judge_job_submit(
        golden_set=golden_set,
        pool_id=pool.pk if pool is not None else None,
        kind=JudgeJob.Kind.LOCAL,
        base_url="",
        model="",
        prompt_text=config if config is not None else default_config(golden_set.grade_values()),
        job_task=None,
        **options,
    )


def labels(golden_set):
    rows = ModelJudgment.objects.filter(golden_set=golden_set).values_list(
        "query__query_id", "page__doc_id", "grade", "score", "raw_answer"
    )
    return {(q, d): (g, s, r) for q, d, g, s, r in rows}


# The configuration.


def test_the_thresholds_map_a_cosine_to_the_highest_grade_it_reaches():
    thresholds = Thresholds(0, {3: 0.7, 2: 0.5, 1: 0.3})
    assert [thresholds.grade(c) for c in (-0.2, 0.29, 0.3, 0.5, 0.69, 0.7, 1.0)] == [0, 0, 1, 2, 2, 3, 3]


def test_the_default_configuration_reads_back_as_the_demo_thresholds():
    read = config_read(default_config([0, 1, 2, 3]), [0, 1, 2, 3])
    assert read.lowest == 0 and read.floors == DEFAULT_THRESHOLDS_0_3


def test_a_scale_other_than_0_to_3_gets_a_threshold_for_each_grade_above_its_lowest():
    read = config_read(default_config([1, 2, 3, 4, 5]), [1, 2, 3, 4, 5])
    assert read.lowest == 1 and sorted(read.floors) == [2, 3, 4, 5]
    assert read.floors[2] < read.floors[3] < read.floors[4] < read.floors[5]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("grade 3 from cosine 0.6\ngrade 2 from cosine 0.5\ngrade one from cosine 0.4", "line 3 'grade one from cosine 0.4' is not"),
        ("grade 3 from cosine 0.6\ngrade 2 from cosine 0.5", "no threshold for grade 1"),
        ("grade 3 from cosine 0.4\ngrade 2 from cosine 0.5\ngrade 1 from cosine 0.3", "must rise with the grades"),
        ("grade 4 from cosine 0.7\ngrade 2 from cosine 0.5\ngrade 1 from cosine 0.3", "line 1: grade 4 is not a grade above 0"),
        ("grade 3 from cosine 1.5\ngrade 2 from cosine 0.5\ngrade 1 from cosine 0.3", "line 1: cosine 1.5 is not between -1 and 1"),
        ("grade 3 from cosine 0.6\ngrade 3 from cosine 0.5\ngrade 1 from cosine 0.3", "line 2: grade 3 is given twice"),
    ],
)
def test_a_bad_configuration_is_refused_naming_its_line(text, problem):
    assert problem in config_problem(text, [0, 1, 2, 3])


# Jobs.


@needs_model
def test_a_local_job_grades_every_pair_by_the_cosine_and_stores_model_labels_never_human_ones(pooled):
    golden_set, pool = pooled
    human_before = Judgment.objects.filter(query__golden_set=golden_set).count()
    job = judge_job_run(local_job(golden_set, pool).pk)
    assert job.status == "done", job.error
    assert (job.pairs_total, job.pairs_done, job.pairs_failed, job.pairs_skipped) == (7, 7, 0, 0)
    assert job.model == minilm.MODEL_NAME and job.kind == "local" and job.base_url == ""
    got = labels(golden_set)
    assert len(got) == 7
    thresholds = config_read(ModelPrompt.objects.get(prompt_hash=job.prompt_hash).text, [0, 1, 2, 3])
    for grade, score, raw in got.values():
        assert raw == f"{score:.6f}" and grade == thresholds.grade(score)
    # The model tells the pages apart: the password help page is nearer the password question
    # than the refund and truck pages are.
    assert got[("q-pw", "html")][1] > max(got[("q-pw", "refund")][1], got[("q-pw", "trucks")][1]) + 0.2
    assert got[("q-refund", "refund")][1] > max(got[("q-refund", d)][1] for d in ("reset", "html", "trucks")) + 0.2
    assert Judgment.objects.filter(query__golden_set=golden_set).count() == human_before


@needs_model
def test_a_local_job_counts_forward_passes_and_word_pieces_and_costs_nothing(pooled):
    golden_set, pool = pooled
    job = judge_job_run(local_job(golden_set, pool).pk)
    # One pass for the two queries, one for the four pages: all fit a batch of 32.
    assert job.requests == 2 and job.completion_tokens == 0 and job.price_in is None and job.price_out is None
    pieces = minilm.embed_texts([*QUERIES.values()]).word_pieces
    assert job.prompt_tokens > sum(pieces)  # the pages' pieces come on top of the queries'


@needs_model
def test_a_local_job_run_again_skips_what_it_graded_and_edited_thresholds_are_a_new_source(pooled):
    golden_set, pool = pooled
    first = judge_job_run(local_job(golden_set, pool).pk)
    again = judge_job_run(local_job(golden_set, pool).pk)
    assert again.prompt_hash == first.prompt_hash
    assert (again.pairs_skipped, again.pairs_done, again.requests) == (7, 0, 0)
    edited = judge_job_run(local_job(golden_set, pool, config=config_text({3: 0.9, 2: 0.8, 1: 0.7})).pk)
    assert edited.prompt_hash != first.prompt_hash and edited.pairs_done == 7
    assert ModelJudgment.objects.filter(golden_set=golden_set).count() == 14


@needs_model
def test_a_local_job_grades_a_sample_when_asked(pooled):
    golden_set, pool = pooled
    job = judge_job_run(local_job(golden_set, pool, sample_size=3).pk)
    assert job.pairs_total == 3 and job.pairs_done == 3


def test_a_bad_configuration_refuses_the_job_naming_the_field_and_records_nothing(pooled):
    golden_set, pool = pooled
    with pytest.raises(GoldsetError) as refused:
        local_job(golden_set, pool, config="grade 3 from cosine 0.6")
    assert any(problem.startswith("config: no threshold for grade 1, 2") for problem in refused.value.problems)
    assert not JudgeJob.objects.exists() and not ModelPrompt.objects.exists()


# Without the optional model extra.


@pytest.fixture
def model_missing(monkeypatch):
    problem = f"the local model {minilm.MODEL_NAME} is not installed (missing: {minilm.PACKAGE}); {minilm.INSTALL_HINT}"
    monkeypatch.setattr(minilm, "install_problem", lambda: problem)
    return problem


def test_without_the_extra_a_local_job_is_refused_saying_how_to_install_it(pooled, model_missing):
    golden_set, pool = pooled
    with pytest.raises(GoldsetError) as refused:
        local_job(golden_set, pool)
    assert refused.value.problems == [f"kind: {model_missing}"]
    assert "requirements-model.txt" in model_missing
    assert not JudgeJob.objects.exists()


def test_a_worker_without_the_extra_fails_the_job_saying_so_and_grades_nothing(pooled, monkeypatch):
    golden_set, pool = pooled
    # Recorded as a web process that has the extra records it; the worker has not.
    job = JudgeJob.objects.create(golden_set=golden_set, pool=pool, kind="local", model=minilm.MODEL_NAME, prompt_hash="0" * 64)
    monkeypatch.setattr(minilm, "install_problem", lambda: "the local model all-MiniLM-L6-v2 is not installed (...)")
    job = judge_job_run(job.pk)
    assert job.status == "failed" and job.error == "the local model all-MiniLM-L6-v2 is not installed (...); nothing was graded"
    assert not ModelJudgment.objects.exists()


def test_without_the_extra_the_form_says_the_local_judge_cannot_run_here(client, owner, pooled, model_missing):
    golden_set, _ = pooled
    client.force_login(owner)
    page = client.get(reverse("model_labels", args=[golden_set.slug])).content.decode()
    assert "The local judge cannot run here:" in page and "requirements-model.txt" in page


# The page.


def local_form(pool, **changes):
    # CRLF line ends, as a browser sends a textarea's.
    data = {
        "pool": pool.pk,
        "kind": "local",
        "base_url": "",
        "model": "",
        "api_key_env": "",
        "prompt": "",
        "config": default_config([0, 1, 2, 3]).replace("\n", "\r\n"),
        "sample": "",
        "max_in_flight": "4",
        "price_in": "",
        "price_out": "",
    }
    return {**data, **changes}


@needs_model
def test_a_manager_starts_a_local_job_from_the_page_and_finds_it_listed(client, owner, pooled, django_capture_on_commit_callbacks):
    golden_set, pool = pooled
    client.force_login(owner)
    page = client.get(reverse("model_labels", args=[golden_set.slug])).content.decode()
    assert 'value="local"' in page and "grade 3 from cosine" in page and "cannot run here" not in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("judge_job_start", args=[golden_set.slug]), local_form(pool))
    assert response.status_code == 302
    job = JudgeJob.objects.get()
    assert job.kind == "local" and job.status == "done" and job.pairs_done == 7
    # The thresholds sent back unchanged hash as the command's default does.
    assert ModelPrompt.objects.get(prompt_hash=job.prompt_hash).text == default_config([0, 1, 2, 3])
    listed = client.get(reverse("judge_jobs", args=[golden_set.slug])).content.decode()
    assert f"{minilm.MODEL_NAME}</strong> (local) · thresholds" in listed
    assert f"2 forward passes · {job.prompt_tokens} word pieces · run offline on the worker, free" in listed


def test_a_bad_local_form_is_shown_again_with_the_thresholds_at_fault(client, owner, pooled):
    golden_set, pool = pooled
    client.force_login(owner)
    response = client.post(reverse("judge_job_start", args=[golden_set.slug]), local_form(pool, config="grade 9 from cosine 0.5"))
    assert response.status_code == 400
    errors = response.context["judge_form"].errors
    assert "config" in errors or "kind" in errors
    assert not JudgeJob.objects.exists()


def test_only_a_manager_starts_a_local_job(client, teammate, stranger, make_user, pooled):
    golden_set, pool = pooled
    membership_grant(user=teammate, golden_set=golden_set, role=Membership.Role.ADJUDICATOR)
    annotator = make_user("annotator")
    membership_grant(user=annotator, golden_set=golden_set, role=Membership.Role.ANNOTATOR)
    url = reverse("judge_job_start", args=[golden_set.slug])
    for user in (teammate, annotator, stranger):
        client.force_login(user)
        assert client.post(url, local_form(pool)).status_code == 404
    client.logout()
    response = client.post(url, local_form(pool))
    assert response.status_code == 302 and "/login" in response["Location"]
    assert not JudgeJob.objects.exists()


# The command.


@needs_model
def test_the_command_grades_the_pool_locally_and_says_what_it_did(pooled, tmp_path):
    golden_set, pool = pooled
    config = tmp_path / "thresholds.txt"
    config.write_text(config_text({3: 0.7, 2: 0.55, 1: 0.4}), encoding="utf-8")
    out = StringIO()
    call_command("model_judge", golden_set.slug, "--pool", str(pool.pk), "--local", "--config-file", str(config), stdout=out)
    lines = out.getvalue().splitlines()
    job = JudgeJob.objects.get()
    assert lines[0] == f"judge job {job.pk}: {minilm.MODEL_NAME}, thresholds {job.prompt_hash[:12]}, pool {pool.pk}"
    assert lines[-3:] == [
        "pairs: 7 (7 graded, 0 failed, 0 labelled already)",
        f"forward passes: 2, word pieces: {job.prompt_tokens} (offline, free)",
        "model labels are kept apart: no version, export or score reads them",
    ]


def test_the_command_asks_a_chat_judge_for_its_url_and_model(pooled):
    golden_set, pool = pooled
    with pytest.raises(CommandError, match="needs --base-url and --model"):
        call_command("model_judge", golden_set.slug, "--pool", str(pool.pk))


# The demo, graded offline (issue #16's acceptance).


@pytest.fixture
def offline(monkeypatch):
    """Any connection to an address other than this machine's fails the test: the model is
    read from its package, never fetched. The database and Redis are on 127.0.0.1."""
    import socket

    real_connect = socket.socket.connect
    attempts = []

    def connect(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1", "localhost"):
            attempts.append(address)
            raise OSError(f"the test is offline: no connection to {address}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(name, "1")
    yield attempts
    assert attempts == [], f"the local judge tried to reach {attempts}"


DEMO_SAMPLE = 100


def pool_pairs_of(pool) -> set[tuple[str, str]]:
    from goldenset.models import Page, Query
    from labeling.pools.selectors import pool_pairs

    pairs = pool_pairs(pool)
    queries = dict(Query.objects.filter(golden_set=pool.golden_set).values_list("pk", "query_id"))
    pages = dict(Page.objects.filter(pk__in=set(pairs.page_pks.tolist())).values_list("pk", "doc_id"))
    return {(queries[q], pages[p]) for q, p in zip(pairs.query_pks.tolist(), pairs.page_pks.tolist())}


@pytest.mark.whole_system
@needs_model
def test_the_packaged_model_grades_the_demo_pool_offline(client, offline):
    from goldenset.models import Version
    from goldset.demo.services import demo_load

    loaded = demo_load(monitoring=False)
    golden_set, pool = loaded.golden_set, loaded.pool.pool
    hashes = list(Version.objects.filter(golden_set=golden_set).order_by("number").values_list("content_hash", flat=True))
    human_before = Judgment.objects.filter(query__golden_set=golden_set).count()

    # A sample of the pool: a page of 256 word pieces is about 6 GFLOP (0.1 s of two cores),
    # and the whole pool (2,132 pairs) took three minutes here, too long for the suite.
    job = judge_job_run(local_job(golden_set, pool, sample_size=DEMO_SAMPLE).pk)

    assert job.status == "done", job.error
    assert (job.pairs_total, job.pairs_done, job.pairs_failed) == (DEMO_SAMPLE, DEMO_SAMPLE, 0)
    assert job.requests >= 2 and job.prompt_tokens > DEMO_SAMPLE and job.completion_tokens == 0
    got = labels(golden_set)
    assert len(got) == DEMO_SAMPLE and set(got) <= pool_pairs_of(pool)
    thresholds = config_read(default_config([0, 1, 2, 3]), [0, 1, 2, 3])
    assert all(grade == thresholds.grade(score) and -1.0 <= score <= 1.0 for grade, score, _ in got.values())
    # A real model, not a constant: the cosines of the pool's pages (the first-stage runs'
    # top 3 that nobody has judged yet, most of them graded 0) spread over a range.
    cosines = np.array([score for _, score, _ in got.values()])
    assert cosines.std() > 0.03 and len({round(c, 3) for c in cosines}) > DEMO_SAMPLE // 2, cosines
    # Model labels stay apart: people's judgments and the published versions are untouched.
    assert Judgment.objects.filter(query__golden_set=golden_set).count() == human_before
    assert list(Version.objects.filter(golden_set=golden_set).order_by("number").values_list("content_hash", flat=True)) == hashes
    # The manager finds them on the model labels page, named by the model.
    client.force_login(golden_set.memberships.filter(role=Membership.Role.MANAGER).first().user)
    page = client.get(reverse("model_labels", args=[golden_set.slug]))
    assert page.status_code == 200 and minilm.MODEL_NAME in page.content.decode()


# Grading the pairs people judged (issue 30 item 6): what calibration needs.


@pytest.fixture
def judged(pooled):
    """The pooled set with a version holding people's labels on three pairs, none of them
    in the pool's unlabelled pairs the default job would grade."""
    golden_set, pool = pooled
    judgment_record(
        query=golden_set.queries.get(query_id="q-refund"),
        page=golden_set.corpus.pages.get(doc_id="refund"),
        grade=3,
        annotator=None,
        source=Judgment.Source.IMPORTED,
    )
    judgment_record(
        query=golden_set.queries.get(query_id="q-refund"),
        page=golden_set.corpus.pages.get(doc_id="trucks"),
        grade=0,
        annotator=None,
        source=Judgment.Source.IMPORTED,
    )
    version_publish(golden_set=golden_set)
    return golden_set, pool


@needs_model
def test_a_job_on_the_pairs_people_judged_grades_exactly_the_versions_labels_and_calibration_reads_them(judged):
    golden_set, pool = judged
    job = judge_job_run(local_job(golden_set, None, pairs=JudgeJob.Pairs.JUDGED).pk)
    assert (job.status, job.pool_id, job.pairs_total, job.pairs_done) == ("done", None, 3, 3)
    assert set(labels(golden_set)) == {("q-pw", "reset"), ("q-refund", "refund"), ("q-refund", "trucks")}
    source = next(source for source in model_sources(golden_set) if source.prompt_hash == job.prompt_hash)
    assert calibration_report(golden_set, source).overall.pairs == 3


@needs_model
def test_a_sample_of_the_judged_pairs_is_drawn_from_them_only(judged):
    golden_set, _ = judged
    job = judge_job_run(local_job(golden_set, None, pairs=JudgeJob.Pairs.JUDGED, sample_size=2).pk)
    assert job.pairs_total == 2
    assert set(labels(golden_set)) < {("q-pw", "reset"), ("q-refund", "refund"), ("q-refund", "trucks")}


def test_grading_the_judged_pairs_needs_a_version_and_no_pool(pooled):
    golden_set, pool = pooled
    with pytest.raises(GoldsetError) as refused:
        local_job(golden_set, None, pairs=JudgeJob.Pairs.JUDGED)
    assert any(problem.startswith("pairs: ") and "publish one first" in problem for problem in refused.value.problems)
    with pytest.raises(GoldsetError, match="pairs"):
        local_job(golden_set, pool, pairs="everything")


@needs_model
def test_the_page_offers_the_judged_pairs_and_says_so_when_calibration_has_none(client, owner, judged, django_capture_on_commit_callbacks):
    golden_set, pool = judged
    # A model that graded only pairs nobody judged: calibration has nothing to compare.
    model_labels_import(golden_set=golden_set, model="filler", prompt_text="fill", records=[ModelLabelLine(1, "q-pw", "html", 1)])
    client.force_login(owner)
    page = client.get(reverse("model_labels", args=[golden_set.slug])).content.decode()
    assert 'value="judged"' in page and "pairs people judged" in page
    assert 'data-hint="grade-judged"' in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("judge_job_start", args=[golden_set.slug]), {**local_form(pool, pairs="judged"), "pool": ""})
    assert response.status_code == 302
    job = JudgeJob.objects.get()
    assert (job.pairs, job.pool_id, job.pairs_done) == ("judged", None, 3)
    listed = client.get(reverse("judge_jobs", args=[golden_set.slug])).content.decode()
    assert "pairs people judged" in listed


@needs_model
def test_the_command_grades_the_judged_pairs(judged):
    golden_set, _ = judged
    out = StringIO()
    call_command("model_judge", golden_set.slug, "--judged", "--local", stdout=out)
    assert "the pairs people judged" in out.getvalue()
    assert JudgeJob.objects.get().pairs_done == 3
