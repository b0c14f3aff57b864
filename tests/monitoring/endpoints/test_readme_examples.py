"""The endpoint examples of the monitoring guide (docs/monitoring.md), one per preset, run
as written (issue 30: "the endpoint examples a new user copies work as written, for each
preset").

Each `endpoint_add` line between the guide's markers is run as the command line would, its
host replaced by a real server of that kind started here: osmem-server (an OpenSearch-
compatible server from PyPI) for OpenSearch, Groonga's own HTTP server (Debian's
groonga-bin) for the generic GET example, and, where no engine installs here (Elasticsearch,
Solr, Vespa, a team's own Goldset-contract service), the test engines server, which answers
each preset's documented request and answer shape (tests/monitoring/endpoints/engines.py).
Then each registered endpoint is probed and must answer pages.
"""

import re
import shlex
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from monitoring.models import Endpoint
from tests.monitoring.endpoints import engines as engines_module
from tests.monitoring.endpoints.test_query_syntax_engines import groonga, opensearch  # noqa: F401 - fixtures
from tests.support import factories

pytestmark = pytest.mark.django_db

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "monitoring.md"
HOST = re.compile(r"http://search\.internal:\d+")


def readme_commands() -> list[list[str]]:
    text = GUIDE.read_text()
    block = text.split("<!-- endpoint examples: every line below is run by a test -->", 1)[1].split("<!-- end of endpoint examples -->", 1)[
        0
    ]
    lines = [line for line in block.splitlines() if line.startswith(".venv/bin/python manage.py ")]
    return [shlex.split(line)[2:] for line in lines]


def test_every_preset_has_an_example():
    presets = {args[args.index("--preset") + 1] for args in readme_commands() if args[0] == "endpoint_add"}
    assert presets == set(Endpoint.Preset.values)


def test_the_readme_endpoint_examples_register_and_answer_as_written(opensearch, groonga):  # noqa: F811 - fixtures
    engines = engines_module.start()
    try:
        golden_set = factories.sliced_set("wiki-demo")
        bases = {"opensearch": opensearch, "generic": groonga}
        names = []
        for args in readme_commands():
            if args[0] != "endpoint_add":
                continue
            preset = args[args.index("--preset") + 1]
            args = [HOST.sub(bases.get(preset, engines.base), arg) for arg in args]
            out = StringIO()
            call_command(*args, stdout=out)
            names.append(args[args.index("--name") + 1])
        assert Endpoint.objects.filter(golden_set=golden_set).count() == len(names) > len(Endpoint.Preset.values)
        # The guide's probe line, as written, then the same probe of every other endpoint.
        [probe] = [args for args in readme_commands() if args[0] == "endpoint_probe"]
        queries = {"os-first": probe[probe.index("--query") + 1], "groonga-first": "see a/b"}
        for name in names:
            out = StringIO()
            call_command("endpoint_probe", "wiki-demo", name, "--query", queries.get(name, "recall at k"), "--k", "3", stdout=out)
            printed = out.getvalue()
            read = re.search(r"ranking read \((\d+) of k=3\):\n((?:\s+\d+\s+\S+.*\n)+)", printed)
            assert read and int(read.group(1)) > 0, f"{name}: no page in the probe's answer:\n{printed}"
            assert "problem:" not in printed, printed
    finally:
        engines_module.stop(engines)
