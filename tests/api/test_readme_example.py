"""The README's worked example, run as it is written against the app: an eval job that
pins a version, loads its qrels with ranx, evaluates a run and uploads it."""

import gzip
import re
from pathlib import Path

import pytest
import requests
from django.test import Client
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

from evaluation.models import Run
from goldenset.services import version_publish
from tests.api import RUN, make_set

pytestmark = pytest.mark.django_db

README = Path(__file__).resolve().parents[2] / "README.md"
SERVER = "http://goldset.test"
PIN = re.compile(r"VERSION, CONTENT_HASH = .*")


def worked_example() -> str:
    section = README.read_text(encoding="utf-8").split("## Worked example: an eval job", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


class DjangoAdapter(BaseAdapter):
    """Hands a `requests` request to the Django app in this process: no server, no network."""

    def send(self, request, **kwargs):
        headers = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in request.headers.items() if k.lower() != "content-type"}
        answer = Client().generic(
            request.method, request.path_url, data=request.body or b"",
            content_type=request.headers.get("Content-Type", ""), **headers,
        )
        response = requests.Response()
        response.status_code = answer.status_code
        response.headers = CaseInsensitiveDict(answer.headers)
        response._content = b"".join(answer.streaming_content) if answer.streaming else answer.content
        if answer.headers.get("Content-Encoding") == "gzip":  # requests sends Accept-Encoding: gzip; urllib3 would decode
            response._content = gzip.decompress(response._content)
        response.url, response.request, response.encoding = request.url, request, "utf-8"
        return response

    def close(self):
        pass


@pytest.fixture
def eval_job(manager, token, tmp_path, monkeypatch):
    """run(pin) executes the README's block with the pin line replaced by `pin`, in a folder
    holding bm25.run, with the environment it reads; requests reach the app in-process."""
    golden_set = make_set("wiki-demo", manager)  # the set the example names
    (tmp_path / "bm25.run").write_text(RUN, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GOLDSET_URL", SERVER)
    monkeypatch.setenv("GOLDSET_TOKEN", token("write", golden_set))

    class Session(requests.Session):
        def __init__(self):
            super().__init__()
            self.mount(SERVER, DjangoAdapter())

    monkeypatch.setattr(requests.sessions, "Session", Session)

    def run(pin: str) -> None:
        exec(compile(PIN.sub(pin, worked_example()), "README.md", "exec"), {})

    run.golden_set = golden_set
    return run


def test_the_readme_eval_job_downloads_evaluates_and_uploads(eval_job, manager, capsys):
    version = version_publish(golden_set=eval_job.golden_set, user=manager, note="v1")
    eval_job(f'VERSION, CONTENT_HASH = {version.number}, "{version.content_hash}"')
    printed = capsys.readouterr().out
    assert "recall@100" in printed and "ndcg@10" in printed
    [run] = Run.objects.filter(golden_set=eval_job.golden_set)
    assert (run.system, run.stage, run.entry_count) == ("bm25", "first_stage", 5) and run.name.startswith("bm25 ")


def test_the_readme_eval_job_stops_when_the_pinned_hash_does_not_match(eval_job, manager):
    version_publish(golden_set=eval_job.golden_set, user=manager, note="v1")
    with pytest.raises(AssertionError):
        eval_job('VERSION, CONTENT_HASH = 1, "not-the-hash"')
    assert not Run.objects.filter(golden_set=eval_job.golden_set).exists()
