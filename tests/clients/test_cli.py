"""The `goldset` command against a live server: pull, push (from a file and from standard
input, waiting for the scores), scores, and refusals on standard error. Most tests call
main(argv) in this process; one runs the installed console script as a subprocess."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.models import Evaluation, Run, Score
from goldset_client.cli import main
from tests.api import QRELS, RUN, SLUG

GOLDSET = Path(sys.executable).with_name("goldset")


@pytest.fixture
def cli_env(live_server, token, golden_set, version, tmp_path, monkeypatch):
    """GOLDSET_URL, GOLDSET_TOKEN (write, the set's) and GOLDSET_CACHE_DIR set as a job would."""
    secret = token("write", golden_set)
    monkeypatch.setenv("GOLDSET_URL", live_server.url)
    monkeypatch.setenv("GOLDSET_TOKEN", secret)
    monkeypatch.setenv("GOLDSET_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return {"url": live_server.url, "token": secret}


def test_pull_writes_the_pinned_versions_qrels_to_a_file_then_answers_from_the_cache(cli_env, version, capsys):
    assert main(["pull", SLUG, "--version", "1", "--hash", version.content_hash, "-o", "qrels.trec"]) == 0
    assert "downloaded" in capsys.readouterr().err
    lines = Path("qrels.trec").read_text(encoding="utf-8").splitlines()
    assert sorted(tuple(line.split()) for line in lines) == sorted((q, "0", d, str(g)) for (q, d), g in QRELS.items())
    assert main(["pull", SLUG, "--version", "1", "--format", "csv", "-o", "qrels.csv"]) == 0
    assert main(["pull", SLUG, "--version", "1", "--format", "csv", "-o", "qrels.csv"]) == 0
    assert "cache, server said 304" in capsys.readouterr().err
    assert Path("qrels.csv").read_text(encoding="utf-8").startswith("query_id,doc_id,relevance\n")


def test_pull_refuses_a_pinned_hash_that_is_not_the_versions(cli_env, capsys):
    assert main(["pull", SLUG, "--version", "1", "--hash", "0" * 64, "-o", "qrels.trec"]) == 1
    assert f"not the pinned {'0' * 64!r}" in capsys.readouterr().err and not Path("qrels.trec").exists()


def test_push_waits_for_the_scores_and_prints_them(cli_env, version, tmp_path, capsys):
    (tmp_path / "bm25.run").write_text(RUN, encoding="utf-8")
    assert main(["push", "bm25.run", "--golden-set", SLUG, "--system", "bm25", "--stage", "first_stage", "--wait"]) == 0
    out = capsys.readouterr().out.splitlines()
    run = Run.objects.get()
    assert out[0] == f"run {run.id} 'bm25 first_stage': 5 entries over 3 queries"
    header, row = out[1].split("\t"), out[2].split("\t")
    assert header[:5] == ["run", "system", "stage", "version", "status"] and row[:5] == [
        "bm25 first_stage",
        "bm25",
        "first_stage",
        "1",
        "done",
    ]
    stored = dict(Score.objects.filter(evaluation__run=run, slice="").values_list("metric", "value"))
    assert {name: float(value) for name, value in zip(header[5:], row[5:])} == {m: round(v, 4) for m, v in stored.items()}


def test_a_run_pushed_from_standard_input_has_its_scores_read_exactly_as_json(cli_env, version, capsys, monkeypatch):
    read, write = os.pipe()
    os.write(write, RUN.encode())
    os.close(write)
    with os.fdopen(read, "r") as piped:
        monkeypatch.setattr(sys, "stdin", piped)
        assert main(["push", "-", "--golden-set", SLUG, "--system", "dense", "--stage", "reranked", "--name", "dense piped"]) == 0
    run = Run.objects.get()
    assert (run.name, run.source_name, run.entry_count) == ("dense piped", "stdin", 5)
    capsys.readouterr()
    assert main(["scores", SLUG, "--version", "1", "--json"]) == 0
    [evaluation] = json.loads(capsys.readouterr().out)
    stored = Evaluation.objects.get(run=run)
    assert evaluation["scores"] == dict(Score.objects.filter(evaluation=stored, slice="").values_list("metric", "value"))
    assert main(["scores", SLUG, "--run", str(run.id)]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("dense piped\tdense\treranked\t1\tdone\t")


def test_a_refused_push_exits_1_with_the_apis_message_and_problems(cli_env, tmp_path, capsys):
    (tmp_path / "bad.run").write_text("q1 Q0 d1 1 high sys\n", encoding="utf-8")
    assert main(["push", "bad.run", "--golden-set", SLUG, "--system", "bm25", "--stage", "first_stage"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("goldset: 422 invalid: cannot import run bad.run") and "bad.run:1: score 'high' is not a finite number" in err
    assert not Run.objects.exists()


def test_the_installed_goldset_command_pulls_to_standard_output(cli_env, version):
    env = {**os.environ, "GOLDSET_URL": "http://nowhere.invalid", "GOLDSET_TOKEN": "gs_wrong"}  # the flags win
    done = subprocess.run(
        [str(GOLDSET), "--url", cli_env["url"], "--token", cli_env["token"], "pull", SLUG, "--version", "1", "--format", "json"],
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    pulled = json.loads(done.stdout)
    assert {(q, d): g for q, docs in pulled.items() for d, g in docs.items()} == QRELS


def test_publish_prints_the_new_versions_number_and_hash(cli_env, golden_set, version, capsys):
    from goldenset.models import Version
    from goldenset.services import qrels_import

    qrels_import(golden_set_slug=SLUG, lines=["q3 0 d1 2\n"], source_name="more")
    assert main(["publish", SLUG, "--note", "nightly labels"]) == 0
    stored = Version.objects.get(golden_set=golden_set, number=2)
    assert capsys.readouterr().out == f"{SLUG} version 2\t{stored.content_hash}\t{stored.label_count} labels\n"
    assert main(["publish", SLUG]) == 1
    assert "409 conflict: nothing changed since version 2" in capsys.readouterr().err


def test_pull_to_a_folder_that_does_not_exist_says_so_without_a_traceback(cli_env, capsys):
    """Issue 30 item 12: `goldset pull -o /missing/dir/x` printed a traceback."""
    assert main(["pull", SLUG, "--version", "1", "-o", "/missing/dir/qrels.trec"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("goldset: cannot write /missing/dir/qrels.trec: the folder /missing/dir does not exist")
    assert "Traceback" not in err


def test_the_command_tells_its_version(capsys):
    from goldset_client import __version__

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"goldset {__version__}"
