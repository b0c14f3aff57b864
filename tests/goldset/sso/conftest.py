"""A real OpenID Connect provider for the single sign-on tests: tests/support/oidc/provider.mjs
(panva's oidc-provider, installed by `make setup` with npm ci) run by node on a free port.

`oidc_provider(redirect_uri, **options)` starts one, waits for its discovery document and
stops it after the test; `sign_on_settings(provider, ...)` points Goldset at it. Without node
or the provider's node_modules, the tests that need it skip, saying which is missing.
"""

import json
import queue
import shutil
import subprocess
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from goldset.settings import oidc_group_roles

PROVIDER_DIR = Path(__file__).resolve().parents[2] / "support" / "oidc"
CLIENT_ID = "goldset"
CLIENT_SECRET = "goldset-test-secret"
# Ada manages the search team's sets; the ads team's are not hers.
USERS = {
    "ada": {"email": "ada@example.com", "given_name": "Ada", "family_name": "Lovelace", "groups": ["search-eng", "staff"]},
    "bob": {"email": "bob@example.com", "groups": ["nobody-maps-this"]},
}
GROUP_ROLES = "search-eng=acme/search:manager,search-judges=acme/search:annotator,ads-eng=acme/ads:manager,acme-admins=acme:admin"


@dataclass
class Provider:
    issuer: str
    discovery: dict
    process: subprocess.Popen


# How long a provider may take to say it is ready (node loading oidc-provider and making two
# RSA keys, a second or two while the suite's other processes keep every core busy), and how
# many times it is started. Under the whole suite a start has now and then said nothing more
# after oidc-provider's runtime warning, in a full minute as in 20 s, and it has not been
# caught in the act on its own: such a start is stopped and made again, and the test says so
# in a warning that carries what the stuck process was doing (its state and each thread's
# wait, from /proc), so that the cause can be read the next time it happens.
READY_SECONDS = 20
STARTS = 3


def _pumped(process: subprocess.Popen) -> queue.Queue:
    """The process's output lines as they come, then None at its end; read by a thread of
    their own, so that the pipe never fills while the test runs."""
    lines: queue.Queue = queue.Queue()

    def pump():
        with process.stdout:  # closed once the process has ended
            for line in process.stdout:
                lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _process_state(pid: int) -> str:
    """What process `pid` is doing, read from /proc: its state and, for each thread, its name
    and the kernel function it waits in."""
    task = Path(f"/proc/{pid}/task")
    try:
        state = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:"))
        threads = [f"{(t / 'comm').read_text().strip()}:{(t / 'wchan').read_text().strip() or '-'}" for t in sorted(task.iterdir())]
    except (OSError, StopIteration):
        return "gone"
    return f"{state.split(':', 1)[1].strip()}; threads {', '.join(threads)}"


def _ready_issuer(process: subprocess.Popen) -> tuple[str | None, str]:
    """(the issuer the provider's ready line names, or None if it said none in READY_SECONDS,
    what it printed until then)."""
    lines = _pumped(process)
    said = []
    deadline = time.monotonic() + READY_SECONDS
    while True:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0))
        except queue.Empty:
            return None, "".join(said)
        if line is None:
            raise AssertionError(f"the OIDC provider exited ({process.wait()}): {''.join(said)}")
        said.append(line)
        if line.startswith("ready "):
            return line.split(" ", 1)[1].strip(), "".join(said)


@pytest.fixture
def oidc_provider():
    node = shutil.which("node")
    if node is None:
        pytest.skip("single sign-on tests need node (apt-get install -y nodejs)")
    if not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        pytest.skip(f"single sign-on tests need the provider's packages: npm ci in {PROVIDER_DIR} (make setup does it)")
    started: list[subprocess.Popen] = []

    def start(
        redirect_uri: str, *, users: dict | None = None, clock_offset: int = 0, foreign_jwks: bool = False, post_logout_uri: str = ""
    ) -> Provider:
        # No --port: the provider listens on a port the system gives it and names it in its
        # "ready" line, so that no other process can take the port first.
        command = [
            node,
            "provider.mjs",
            f"--client-id={CLIENT_ID}",
            f"--client-secret={CLIENT_SECRET}",
            f"--redirect-uri={redirect_uri}",
            f"--users={json.dumps(users or USERS)}",
            f"--clock-offset={clock_offset}",
        ]
        if foreign_jwks:
            command.append("--serve-foreign-jwks")
        if post_logout_uri:
            command.append(f"--post-logout-redirect-uri={post_logout_uri}")
        stuck = []
        for _ in range(STARTS):
            process = subprocess.Popen(command, cwd=PROVIDER_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            started.append(process)
            issuer, said = _ready_issuer(process)
            if issuer is not None:
                break
            stuck.append(f"pid {process.pid} ({_process_state(process.pid)}) had said {said!r}")
            process.kill()
        else:
            raise AssertionError(f"the OIDC provider said nothing ready in {READY_SECONDS} s, {STARTS} times: {stuck}")
        if stuck:
            warnings.warn(f"the OIDC provider said nothing ready in {READY_SECONDS} s and was started again: {stuck}", stacklevel=2)
        discovery = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=30).json()
        return Provider(issuer=issuer, discovery=discovery, process=process)

    yield start
    for process in started:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def sign_on_settings(settings):
    """Goldset signing on through `provider`, as the OIDC_* variables would set it."""

    def point_at(provider: Provider, **overrides) -> None:
        d = provider.discovery
        values = {
            "OIDC_RP_CLIENT_ID": CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
            "SSO_ENABLED": True,
            "OIDC_OP_ISSUER": d["issuer"],
            "OIDC_OP_AUTHORIZATION_ENDPOINT": d["authorization_endpoint"],
            "OIDC_OP_TOKEN_ENDPOINT": d["token_endpoint"],
            "OIDC_OP_USER_ENDPOINT": d["userinfo_endpoint"],
            "OIDC_OP_JWKS_ENDPOINT": d["jwks_uri"],
            "OIDC_RP_SCOPES": "openid email profile groups",
            "OIDC_PROVIDER_NAME": "Acme ID",
            "OIDC_GROUP_ROLES": oidc_group_roles(GROUP_ROLES),
            "AUTHENTICATION_BACKENDS": ["axes.backends.AxesStandaloneBackend", "goldset.sso.PasswordBackend", "goldset.sso.SignOnBackend"],
        }
        values.update(overrides)
        for name, value in values.items():
            setattr(settings, name, value)

    return point_at


@pytest.fixture
def acme(db):
    """Organisation acme with teams search and ads, a set in each."""
    from goldenset.models import default_grade_scale
    from goldenset.services import GoldenSetSource, golden_set_create
    from goldenset.teams import organisation_create, team_create
    from tests.support.factories import pages, queries

    organisation = organisation_create(slug="acme", name="Acme")
    teams = {slug: team_create(organisation=organisation, slug=slug, name=slug.title()) for slug in ("search", "ads")}
    for slug, team in teams.items():
        source = GoldenSetSource(pages=pages("d1", "d2"), queries=queries("q1"), qrels={("q1", "d1"): 1}, grade_scale=default_grade_scale())
        golden_set_create(slug=f"{slug}-set", name=f"{slug.title()} set", source=source, team=team)
    return organisation, teams
