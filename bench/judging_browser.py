"""Grade key to next pair painted, in Chromium, on the demo: what an annotator feels per
judgment. Targets: median under 150 ms (issue 13) and p95 under 150 ms (issue 24).

    .venv/bin/python bench/judging_browser.py [--judgments 200 --warmup 5] [--workers 2]
        [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_judging_browser] [--keep]

Creates the database named by --database-url (it must not exist beforehand), migrates it
and loads the demo (`demo_load`, without its monitoring part: this bench needs no search
service). It serves the app under gunicorn with DEBUG off and whitenoise serving the
collected static files, as a deployment does (goldset.settings, plain HTTP on 127.0.0.1), and
drives Debian's Chromium (/usr/bin/chromium) through Playwright: the demo's annotator logs
in through the login form, opens the judging screen and judges --warmup + --judgments pairs
by pressing a grade key, as a person does.

For each judgment the page itself records (performance.now(), in the page's own clock) the
moment the key went down and the first animation frame after the next pair was swapped in
(htmx:afterSwap, then two requestAnimationFrame callbacks: the second one runs once the
frame holding the new pair was painted). The bench checks that each press showed a new pair
(a new data-task-id) and that the judgments stored grew by exactly the presses.

The reference, measured in the same run and the same page: the round trip of a plain
fetch() of the next-pair URL (server, network and parsing, no swap, no paint), so the
printout separates the server's share from the browser's.
"""

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.scratch import (  # noqa: E402  (needs the repository on sys.path)
    database_url_argument,
    django_setup,
    free_port,
    process_started,
    scratch_database,
    served_settings,
    server_version,
)

TARGET_MEDIAN_MS = 150.0
TARGET_P95_MS = 150.0
CHROMIUM = "/usr/bin/chromium"
# Installed in the page after each load: key-down and painted times of each judgment.
RECORDER = """() => {
  window.__gradeTimes = [];
  let down = null;
  document.addEventListener("keydown", () => { down = performance.now(); }, true);
  document.body.addEventListener("htmx:afterSwap", () => {
    if (down === null) return;
    const started = down;
    down = null;
    requestAnimationFrame(() => requestAnimationFrame(() => {
      window.__gradeTimes.push(performance.now() - started);
    }));
  });
}"""
FETCH_NEXT = """async (url) => {
  const started = performance.now();
  const answer = await fetch(url, {headers: {"HX-Request": "true"}, credentials: "same-origin"});
  await answer.text();
  return performance.now() - started;
}"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def judge(base: str, slug: str, username: str, password: str, presses: int) -> tuple[list[float], list[float], int]:
    """(key-to-paint ms of each press, fetch round trip ms beside each, presses that showed no new pair)."""
    from playwright.sync_api import sync_playwright

    painted: list[float] = []
    fetched: list[float] = []
    stuck = 0
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-background-networking"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(20_000)
            page.goto(f"{base}/accounts/login/")
            page.fill("#id_username", username)
            page.fill("#id_password", password)
            with page.expect_navigation():
                page.click("form button[type=submit]")
            page.goto(f"{base}/label/{slug}/")
            page.wait_for_load_state("load")
            page.evaluate(RECORDER)
            for press in range(presses):
                before = page.get_attribute("#pair", "data-task-id")
                if not before:
                    raise SystemExit(f"the queue ran dry after {press} judgments: no pair to judge")
                fetched.append(page.evaluate(FETCH_NEXT, f"{base}/label/{slug}/next/"))
                page.keyboard.press(str(press % 4))
                try:
                    page.wait_for_function(
                        "([previous, count]) => { const pair = document.querySelector('#pair');"
                        " return pair && pair.dataset.taskId !== previous && window.__gradeTimes.length > count; }",
                        arg=[before, len(painted)],
                    )
                except Exception:  # noqa: BLE001 - a press that showed nothing new is counted, not fatal
                    stuck += 1
                    continue
                painted.append(page.evaluate("window.__gradeTimes[window.__gradeTimes.length - 1]"))
        finally:
            browser.close()
    return painted, fetched, stuck


def run(args: argparse.Namespace) -> bool:
    django_setup(args.database_url, DEBUG="false")
    import gunicorn
    from django.core.management import call_command
    from django.db import connection

    from goldenset.models import Judgment
    from goldset.demo.services import DEMO_SLUG, DEMO_USERS, demo_load

    annotator = next(user for user in DEMO_USERS if user.username == "annotator")
    presses = args.warmup + args.judgments
    with scratch_database(args.database_url, keep=args.keep), tempfile.TemporaryDirectory(prefix="goldset-bench-") as temp:
        call_command("migrate", verbosity=0)
        print("loading the demo ...", file=sys.stderr)
        demo_load(monitoring=False)
        judgments_before = Judgment.objects.count()
        server = server_version()
        connection.close()
        env = served_settings(
            Path(temp),
            {
                **os.environ,
                "DATABASE_URL": args.database_url,
                "ALLOWED_HOSTS": "127.0.0.1",
                "LOG_LEVEL": "WARNING",
            },
            base="goldset.settings",
            name="bench_judging_browser_settings",
        )
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        command = [
            str(Path(sys.executable).with_name("gunicorn")),
            "goldset.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(args.workers),
            "--worker-class",
            "sync",
        ]

        def answers() -> bool:
            import requests

            try:
                return requests.get(f"{base}/accounts/login/", timeout=60).status_code == 200
            except requests.RequestException:
                return False

        print(f"gunicorn {gunicorn.__version__}, {args.workers} workers; Chromium judging {presses} pairs ...", file=sys.stderr)
        with process_started(command, env=env, log_path=Path(temp) / "gunicorn.log", ready=answers, what="gunicorn", timeout=180):
            painted, fetched, stuck = judge(base, DEMO_SLUG, annotator.username, annotator.password, presses)
        stored = Judgment.objects.count() - judgments_before

    measured, reference = painted[args.warmup :], fetched[args.warmup :]
    median = statistics.median(measured) if measured else float("inf")
    p95 = percentile(measured, 95) if measured else float("inf")
    reference_median = statistics.median(reference) if reference else float("nan")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}; "
        f"PostgreSQL {server}; gunicorn {gunicorn.__version__} ({args.workers} sync workers, DEBUG off)"
    )
    print(f"data: the demo ({DEMO_SLUG}); {presses} grade keys pressed by the demo annotator, the first {args.warmup} not counted")
    print(
        f"grade key -> next pair painted   median {median:7.1f} ms   p90 {percentile(measured, 90) if measured else float('nan'):7.1f} ms   "
        f"p95 {p95:7.1f} ms   "
        f"max {max(measured) if measured else float('nan'):7.1f} ms   ({len(measured)} judgments)"
    )
    print(
        f"reference: fetch() of next pair  median {reference_median:7.1f} ms   p90 {percentile(reference, 90) if reference else float('nan'):7.1f} ms   "
        f"(same page, same run: server + network + parsing, no swap or paint)"
    )
    checks_ok = stuck == 0 and stored == presses
    print(
        f"checks: {presses - stuck} of {presses} presses showed a new pair; judgments stored {stored} (expected {presses}): "
        f"{'ok' if checks_ok else 'FAILED'}"
    )
    passed = checks_ok and median < TARGET_MEDIAN_MS and p95 < TARGET_P95_MS
    print(
        f"target: median under {TARGET_MEDIAN_MS:.0f} ms {'PASS' if median < TARGET_MEDIAN_MS else 'MISS'}, "
        f"p95 under {TARGET_P95_MS:.0f} ms {'PASS' if p95 < TARGET_P95_MS else 'MISS'}   {'PASS' if passed else 'MISS'}"
    )
    return passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judgments", type=int, default=200, help="judgments measured (200: a p95 rests on its 10 slowest)")
    parser.add_argument("--warmup", type=int, default=5, help="judgments before measuring (the first requests warm the workers)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    database_url_argument(parser, "goldset_bench_judging_browser")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = parser.parse_args()
    started = time.perf_counter()
    passed = run(args)
    print(f"({time.perf_counter() - started:.0f} s in all)", file=sys.stderr)
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
