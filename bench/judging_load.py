"""The annotators of bench/annotators.py and what is sampled while they judge: each a
client that logs in and judges (next-pair and submit, or the judging screen's submits
alone) against the server, spread over
processes of threads, while pg_stat_activity and the CPU of the app and database
processes are sampled; and the server-side times from gunicorn's access log."""

import argparse
import multiprocessing
import os
import random
import re
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

import psycopg

PASSWORD = "bench-annotator-password"  # every bench annotator's
TASK_ID = re.compile(rb'data-task-id="(\d+)"')
# What the annotator has judged, which every form of the pair fragment posts back (the
# page sends it with the grade; the next fragment counts on from it).
JUDGED = re.compile(rb'name="judged" value="(\d+)"')
# The judge view answers 200 with the next pair and this message when it refuses a grade.
JUDGING_ERROR = re.compile(rb'class="judging-error"[^>]*>([^<]*)<')
GRADES = (0, 1, 2, 3)


# --- the annotators ----------------------------------------------------------------------


class Annotator:
    """One person's browser: a requests session whose cookies are kept by hand, because the
    production settings mark them Secure and the bench speaks plain HTTP to gunicorn (the
    X-Forwarded-Proto header tells Django the request came through TLS, as behind a proxy)."""

    def __init__(self, base: str, username: str):
        from http.cookiejar import DefaultCookiePolicy

        import requests

        self.base, self.username = base, username
        self.session = requests.Session()
        self.session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))  # keep none: see above
        self.cookies: dict[str, str] = {}
        self.origin = "https://" + urlparse(base).netloc

    def request(self, method: str, path: str, phase: str, data: dict | None = None, htmx: bool = False):
        headers = {
            "X-Forwarded-Proto": "https",
            "X-Bench-Phase": phase,
            "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()),
        }
        if method == "POST":
            headers.update({"Origin": self.origin, "Referer": self.origin + path, "X-CSRFToken": self.cookies.get("csrftoken", "")})
        if htmx:
            headers["HX-Request"] = "true"
        response = self.session.request(method, self.base + path, data=data, headers=headers, allow_redirects=False, timeout=60)
        for cookie in response.cookies:
            self.cookies[cookie.name] = cookie.value
        return response

    def login(self) -> None:
        page = self.request("GET", "/accounts/login/", "login")
        match = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content)
        if page.status_code != 200 or not match:
            raise RuntimeError(f"{self.username}: login page answered {page.status_code} without a CSRF token")
        answer = self.request(
            "POST",
            "/accounts/login/",
            "login",
            data={"username": self.username, "password": PASSWORD, "csrfmiddlewaretoken": match.group(1).decode()},
        )
        if answer.status_code != 302 or "sessionid" not in self.cookies:
            raise RuntimeError(f"{self.username}: login answered {answer.status_code}, not a redirect with a session")


def times_next_pair(think: float) -> bool:
    """Whether annotators who pause `think` seconds GET next-pair before every submit, so
    that both requests are timed: where people pause. With no pause (the closed loop) they
    send what the judging screen sends: next-pair once, as the screen loads, then only
    submits, each judging the pair the previous answer showed."""
    return think > 0


def annotator_loop(base: str, username: str, slug: str, warm_until: float, stop_at: float, think: float, seed: int, out: list):
    """One annotator until `stop_at` (time.time()); appends (kind, phase, seconds, ok, detail)
    for each request and ("judged", phase, task id) for each submit answered 200. Which
    requests it sends: times_next_pair."""
    rng = random.Random(seed)
    next_each = times_next_pair(think)
    person = Annotator(base, username)
    try:
        person.login()
    except Exception as error:  # noqa: BLE001 - reported as an error, the others go on
        out.append(("login", "measure", 0.0, False, repr(error)))
        return
    shown = None  # the pair fragment on the screen, from the last submit's answer
    while (now := time.time()) < stop_at:
        phase = "warmup" if now < warm_until else "measure"
        if shown is None or next_each:
            start = time.perf_counter()
            try:
                answer = person.request("GET", f"/label/{slug}/next/", phase, htmx=True)
            except Exception as error:  # noqa: BLE001
                out.append(("next", phase, time.perf_counter() - start, False, repr(error)))
                continue
            seconds = time.perf_counter() - start
            if answer.status_code != 200 or not TASK_ID.search(answer.content):
                out.append(
                    (
                        "next",
                        phase,
                        seconds,
                        False,
                        f"{answer.status_code} {'no data-task-id' if answer.status_code == 200 else answer.content[:200]!r}",
                    )
                )
                time.sleep(0.05)
                continue
            out.append(("next", phase, seconds, True, ""))
            shown = answer.content
        task_id = int(TASK_ID.search(shown).group(1))
        judged = JUDGED.search(shown)
        phase = "warmup" if time.time() < warm_until else "measure"
        grade = rng.choice(GRADES)
        start = time.perf_counter()
        try:
            answer = person.request(
                "POST",
                f"/label/{slug}/tasks/{task_id}/judge/",
                phase,
                htmx=True,
                data={
                    "grade": str(grade),
                    "note": "",
                    "seconds": f"{rng.uniform(1, 10):.1f}",
                    "judged": judged.group(1).decode() if judged else "",
                    "csrfmiddlewaretoken": person.cookies.get("csrftoken", ""),
                },
            )
        except Exception as error:  # noqa: BLE001
            out.append(("submit", phase, time.perf_counter() - start, False, repr(error)))
            shown = None
            continue
        seconds = time.perf_counter() - start
        refused = JUDGING_ERROR.search(answer.content) if answer.status_code == 200 else None
        if answer.status_code == 200 and refused is None:
            out.append(("judged", phase, task_id, username))
        ok = answer.status_code == 200 and refused is None and TASK_ID.search(answer.content) is not None
        if ok:
            detail = ""
        elif answer.status_code != 200:
            detail = f"{answer.status_code} {answer.content[:200]!r}"
        elif refused is not None:
            detail = f"refused: {refused.group(1).decode(errors='replace').strip()}"
        else:
            detail = "no data-task-id in the next pair"
        out.append(("submit", phase, seconds, ok, detail))
        shown = answer.content if ok else None
        if think:
            time.sleep(rng.uniform(0.5, 1.5) * think)


def client_process(base: str, usernames: list[str], slug: str, warm_until: float, stop_at: float, think: float, seed: int, queue):
    """A process of annotator threads (one GIL for a few annotators, not for all of them)."""
    results: list[list] = [[] for _ in usernames]
    threads = [
        threading.Thread(target=annotator_loop, args=(base, name, slug, warm_until, stop_at, think, seed + i, results[i]))
        for i, name in enumerate(usernames)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    queue.put([row for rows in results for row in rows])


def load(args: argparse.Namespace, base: str, slug: str) -> tuple[list, float]:
    """Run the annotators on the golden set `slug`; return every record and the measured
    window in seconds."""
    usernames = [f"annotator{n:02d}" for n in range(args.annotators)]
    groups = [usernames[i :: args.client_processes] for i in range(args.client_processes)]
    groups = [g for g in groups if g]
    # The warm-up counts from about when the client processes are up; logins (the password
    # hasher is slow on purpose) fall into it.
    warm_until = time.time() + 3.0 + args.warmup
    stop_at = warm_until + args.duration
    waits: Counter = Counter()
    cpu: dict = {}
    sampler = threading.Thread(
        target=sample_waits,
        args=(args.database_url, warm_until, stop_at, waits, cpu, args.gunicorn_pid),
        daemon=True,
    )
    sampler.start()
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    processes = [
        context.Process(
            target=client_process,
            args=(base, group, slug, warm_until, stop_at, args.think, args.seed * 1000 + 100 * i, queue),
        )
        for i, group in enumerate(groups)
    ]
    for process in processes:
        process.start()
    rows = []
    for _ in processes:
        rows.extend(queue.get(timeout=args.warmup + args.duration + 300))
    for process in processes:
        process.join(timeout=30)
    sampler.join(timeout=10)
    args.waits = waits
    args.cpu = cpu_used(cpu)
    return rows, args.duration


# --- what the server does meanwhile ------------------------------------------------------


def statement_kind(query: str) -> str:
    """A short name for a statement seen in pg_stat_activity."""
    text = " ".join(query.split())
    upper = text.upper()
    verb = upper.split(" ", 1)[0] if upper else "?"
    main = text
    if verb == "SELECT":  # name the table of the main FROM, not one of a subquery in the select list
        while (shorter := re.sub(r"\([^()]*\)", "", main)) != main:
            main = shorter
    table = re.search(r'(?:FROM|INTO|UPDATE) "?(\w+)"?', main)
    if table is None:  # pg_stat_activity cuts statements at 1 kB: name the table of the first column
        table = re.search(r'"(\w+)"\."', text)
    table = table.group(1) if table else ""
    lock = " FOR UPDATE SKIP LOCKED" if "SKIP LOCKED" in upper else " FOR UPDATE" if "FOR UPDATE" in upper else ""
    return f"{verb} {table}{lock}".strip() if verb not in ("COMMIT", "BEGIN") else verb


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_snapshot(conn, database: str, gunicorn_pid: int) -> dict:
    """CPU seconds so far of each gunicorn worker and each PostgreSQL backend of the database."""
    workers = Path(f"/proc/{gunicorn_pid}/task/{gunicorn_pid}/children").read_text().split()
    backends = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
        (database,),
    ).fetchall()
    return {
        "app": {int(pid): process_cpu_seconds(int(pid)) for pid in workers},
        "db": {pid: process_cpu_seconds(pid) for (pid,) in backends},
        "time": time.time(),
    }


def cpu_used(cpu: dict) -> dict[str, float]:
    """CPU seconds the app workers and the database backends used between the snapshots
    (processes present at both ends: gunicorn workers and kept connections are)."""
    if "start" not in cpu or "end" not in cpu:
        return {}
    used = {}
    for side in ("app", "db"):
        start, end = cpu["start"][side], cpu["end"][side]
        used[side] = sum(end[pid] - start.get(pid, 0.0) for pid in end)
    used["wall"] = cpu["end"]["time"] - cpu["start"]["time"]
    return used


def sample_waits(database_url: str, start_at: float, stop_at: float, out: Counter, cpu: dict, gunicorn_pid: int) -> None:
    """Every 20 ms of the measured window, what each busy backend of the bench database is
    doing (pg_stat_activity): running a statement, waiting on a lock or on I/O, or idle in
    a transaction while the app works (the statement shown is its last). Tells a queue
    behind a row lock apart from CPU or disk time."""
    name = urlparse(database_url).path.lstrip("/")
    with psycopg.connect(database_url, autocommit=True) as conn:
        while time.time() < start_at:
            time.sleep(0.05)
        cpu["start"] = cpu_snapshot(conn, name, gunicorn_pid)
        while time.time() < stop_at:
            rows = conn.execute(
                "SELECT CASE WHEN state = 'active' THEN coalesce(wait_event_type || ':' || wait_event, 'running') "
                "ELSE 'in transaction, app working' END, query "
                "FROM pg_stat_activity WHERE datname = %s AND state <> 'idle' AND pid <> pg_backend_pid()",
                (name,),
            ).fetchall()
            out["samples"] += 1
            for wait, query in rows:
                out[(wait, statement_kind(query))] += 1
            time.sleep(0.02)
        cpu["end"] = cpu_snapshot(conn, name, gunicorn_pid)


def server_times(access_log: Path, offset: int = 0) -> dict[str, list[float]]:
    """Server-side seconds of the measured requests, by kind, from gunicorn's access log
    (from byte `offset` on: the lines of one phase)."""
    times: dict[str, list[float]] = {"next": [], "submit": []}
    with access_log.open("rb") as log:
        log.seek(offset)
        text = log.read().decode(errors="replace")
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 5 or parts[0] != "measure":
            continue
        kind = "next" if parts[2].endswith("/next/") else "submit" if parts[2].endswith("/judge/") else None
        if kind:
            times[kind].append(int(parts[4]) / 1e6)
    return times
