"""`goldset gate` and `goldset pull --version TAG` against a live server (the issue's
acceptance): on 300 queries the gate passes an unchanged run, fails a run that lost 5 points
of recall, and passes a drop within noise; its JUnit XML parses. A tag pulled resolves to
the version it names, and moving it changes what the next pull gets."""

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evaluation.models import Run
from evaluation.services import run_import
from goldenset.services import qrels_import, version_publish
from goldenset.tags import tag_move
from goldset_client import GoldsetClient
from goldset_client.cli import main
from tests.support import factories

SLUG = "gated"
QUERIES = 300
PAGES = 40
RELEVANT = 4  # per query, so a query's recall moves in quarters


def relevant_of(query: int) -> list[str]:
    return [f"d{(query + j) % PAGES + 1}" for j in range(RELEVANT)]


def found_of(query: int) -> int:
    """How many of its relevant pages the baseline finds for query `query`: 1 to 4, so that
    per-query recall spreads as a real run's does."""
    return 1 + (query * 7) % RELEVANT


def run_text(found: dict[int, int]) -> str:
    """A TREC run finding found[q] relevant pages of each query q first, then others, ten deep."""
    lines = []
    for query in range(1, QUERIES + 1):
        relevant = relevant_of(query)
        others = [f"d{n}" for n in range(1, PAGES + 1) if f"d{n}" not in relevant]
        ranked = relevant[: found[query]] + others[: 10 - found[query]]
        lines += [f"q{query} Q0 {doc} {rank} {100 - rank} sys\n" for rank, doc in enumerate(ranked, 1)]
    return "".join(lines)


BASELINE = {query: found_of(query) for query in range(1, QUERIES + 1)}


def dropped(count: int) -> dict[int, int]:
    """The baseline with one relevant page fewer on `count` queries that had two or more."""
    found, left = dict(BASELINE), count
    for query in found:
        if left and found[query] >= 2:
            found[query] -= 1
            left -= 1
    return found


def noisy() -> dict[int, int]:
    """30 queries lose a relevant page and 26 others gain one: a net drop of a third of a
    point, far inside what 300 queries can tell from chance."""
    found, lose, gain = dict(BASELINE), 30, 26
    for query in found:
        if lose and found[query] >= 2:
            found[query] -= 1
            lose -= 1
        elif gain and found[query] <= 3:
            found[query] += 1
            gain -= 1
    return found


@pytest.fixture
def manager(make_user):
    return make_user("manager")


@pytest.fixture
def gated(manager):
    """The set (v1), the main line's run scored on it, and tag prod on v1."""
    qrels = {(f"q{q}", doc): 1 for q in range(1, QUERIES + 1) for doc in relevant_of(q)}
    pages = factories.pages(*(f"d{n}" for n in range(1, PAGES + 1)))
    queries = factories.queries(*(f"q{q}" for q in range(1, QUERIES + 1)), lang="en")
    golden_set = factories.golden_set(SLUG, manager=manager, qrels=qrels, pages=pages, queries=queries, k_first=10, k_final=4)
    version = version_publish(golden_set=golden_set, user=manager, note="first")
    run_import(
        golden_set=golden_set,
        lines=run_text(BASELINE).splitlines(True),
        source_name="main.run",
        system="bm25",
        stage="first_stage",
        name="bm25 main",
    )
    tag_move(golden_set=golden_set, name="prod", version=version, user=manager)
    return golden_set


@pytest.fixture
def gate_env(live_server, gated, manager, tmp_path, monkeypatch):
    from api.services import api_token_create

    _, secret = api_token_create(owner=manager, scope="write", golden_set=gated)
    monkeypatch.setenv("GOLDSET_URL", live_server.url)
    monkeypatch.setenv("GOLDSET_TOKEN", secret)
    monkeypatch.setenv("GOLDSET_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return {"url": live_server.url, "token": secret}


def gate(tmp_path: Path, found: dict[int, int], *extra: str) -> int:
    (tmp_path / "candidate.run").write_text(run_text(found), encoding="utf-8")
    return main(["gate", SLUG, "--run", "candidate.run", "--baseline", "prod", "--junit", "gate.xml", *extra])


def junit(tmp_path: Path) -> dict[str, bool]:
    suite = ET.parse(tmp_path / "gate.xml").getroot()
    assert suite.tag == "testsuite"
    return {case.get("name"): case.find("failure") is not None for case in suite.iter("testcase")}


def test_an_unchanged_run_passes(gate_env, tmp_path, capsys):
    assert gate(tmp_path, BASELINE, "--max-drop", "3") == 0
    out = capsys.readouterr().out
    assert "on version 1 (tag prod)" in out and "'bm25 main'" in out and out.rstrip().endswith("PASS")
    assert junit(tmp_path) == {"recall@10 on all queries": False, "recall@4 on all queries": False}
    # The candidate is archived once compared: it never becomes the next baseline.
    assert Run.objects.filter(archived_at__isnull=True).count() == 1


def test_a_five_point_drop_on_300_queries_fails(gate_env, tmp_path, capsys):
    assert gate(tmp_path, dropped(60), "--max-drop", "3", "--slice", "lang=en") == 1
    out = capsys.readouterr().out
    assert "\t5.00\t" in out and "FAIL" in out
    assert junit(tmp_path) == {
        "recall@10 on all queries": True,
        "recall@4 on all queries": True,
        "recall@10 on query:lang=en": True,
        "recall@4 on query:lang=en": True,
    }
    suite = ET.parse(tmp_path / "gate.xml").getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("4", "4")


def test_a_drop_past_the_threshold_but_within_noise_passes(gate_env, tmp_path, capsys):
    assert gate(tmp_path, noisy(), "--max-drop", "0.2", "--metric", "recall@10") == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("recall@10\t"))
    assert row.split("\t")[5] == "0.33"  # a third of a point (printed to 2 places), past 0.2
    assert junit(tmp_path) == {"recall@10 on all queries": False}


def test_a_small_drop_under_the_threshold_passes_even_when_significant(gate_env, tmp_path):
    assert gate(tmp_path, dropped(60), "--max-drop", "6") == 0


def test_a_baseline_run_by_name_is_compared_on_the_latest_version(gate_env, tmp_path, capsys):
    (tmp_path / "candidate.run").write_text(run_text(dropped(60)), encoding="utf-8")
    assert main(["gate", SLUG, "--run", "candidate.run", "--baseline", "bm25 main", "--max-drop", "3"]) == 1
    assert "against 'bm25 main' on version 1 " in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--baseline", "nightly"], "no tag or run named 'nightly'"),
        (["--baseline", "prod", "--metric", "ndcg@99"], "metric 'ndcg@99'"),
        (["--baseline", "prod", "--slice", "lang=xx"], "slice 'query:lang=xx'"),
    ],
)
def test_an_unknown_baseline_metric_or_slice_is_exit_2_naming_it(gate_env, tmp_path, capsys, argv, said):
    (tmp_path / "candidate.run").write_text(run_text(BASELINE), encoding="utf-8")
    assert main(["gate", SLUG, "--run", "candidate.run", "--max-drop", "3", *argv]) == 2
    assert said in capsys.readouterr().err


def test_a_bad_token_or_a_missing_file_is_exit_2(gate_env, tmp_path, capsys, monkeypatch):
    assert main(["gate", SLUG, "--run", "nothing.run", "--baseline", "prod", "--max-drop", "3"]) == 2
    assert "--run" in capsys.readouterr().err
    (tmp_path / "candidate.run").write_text(run_text(BASELINE), encoding="utf-8")
    monkeypatch.setenv("GOLDSET_TOKEN", "gs_not-a-token")
    assert main(["gate", SLUG, "--run", "candidate.run", "--baseline", "prod", "--max-drop", "3"]) == 2
    with pytest.raises(SystemExit) as usage:
        main(["gate", SLUG, "--run", "candidate.run", "--max-drop", "3"])
    assert usage.value.code == 2


def test_pull_resolves_a_tag_and_follows_it_when_it_moves(gate_env, gated, manager, tmp_path, capsys):
    qrels_import(golden_set_slug=SLUG, lines=["q1 0 d40 2\n"], source_name="more")
    second = version_publish(golden_set=gated, user=manager, note="second")
    assert main(["pull", SLUG, "--version", "prod", "-o", "prod.trec"]) == 0
    assert "version 1 " in capsys.readouterr().err
    assert "q1 0 d40 2" not in Path("prod.trec").read_text()
    client = GoldsetClient(gate_env["url"], gate_env["token"], cache_dir=tmp_path / "cache")
    moved = client.move_tag(SLUG, "prod", 2, note="v2 is out")
    assert (moved["version"], moved["content_hash"], [m["to_version"] for m in moved["history"]]) == (2, second.content_hash, [2, 1])
    assert main(["pull", SLUG, "--version", "prod", "-o", "prod.trec"]) == 0
    assert "version 2 " in capsys.readouterr().err
    assert "q1 0 d40 2" in Path("prod.trec").read_text()
