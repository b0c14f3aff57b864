"""The oracle experiment of 2,000 queries x 3 contexts against a local chat server, beside
a plain async aiohttp client making the same requests.

    .venv/bin/python bench/oracle.py [--queries 2000] [--small 500] [--in-flight 16] [--latency 0.05]
        [--rounds 2] [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_oracle]

Issue 26's targets (answers/experiments.py):

- data: a golden set of --queries queries over 4 pages a query (one relevant, with the
  sentence that answers it), reference answers for all, published; a run ranking 10 pages
  a query; k_final 3. A local OpenAI-compatible chat server in a process of its own
  (aiohttp) that holds each answer --latency seconds (a generator takes time to write) and
  answers a pure function of the prompt, with usage;
- time: Goldset's experiment (`oracle_experiment_run`: every query with the oracle, the
  retrieved and no context, --in-flight requests in flight, the contexts read, the answers
  scored and written as they settle) against a plain aiohttp client posting the same
  request bodies at the same concurrency and reading each answer's JSON, in the same run,
  alternating, median of --rounds. Target: within 1.3x (PASS).
- memory: the experiment in a fresh process for a set of --small queries and one of
  --queries: its peak resident memory above the process's start (Django, aiohttp and the
  app imported). Target: the larger within 1.25x of the smaller, so the worker holds a
  block at a time, not the experiment (flat in the number of queries).

Tasks sent on commit go to a Redis queue of the bench's own that nobody consumes, purged at
the end; the database is created for the run and dropped at the end.
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.scratch import database_url_argument, django_setup, free_port, peak_memory, purge_queue, scratch_database  # noqa: E402

TARGET_RATIO = 1.3
MEMORY_TARGET = 1.25
BROKER = "redis://127.0.0.1:6379/14"
PAGES_PER_QUERY = 4
DEPTH = 10
K_FINAL = 3


# --- the chat server, in its own process ------------------------------------------------------


def serve(port: int, latency: float) -> None:
    """POST /v1/chat/completions: after `latency` s, the prompt's question line echoed (a pure
    function of the prompt), with usage counting words."""
    from aiohttp import web

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        prompt = body["messages"][-1]["content"]
        await asyncio.sleep(latency)
        line = next((line for line in prompt.splitlines() if line.startswith("Question:")), "Question: none")
        answer = line.removeprefix("Question:").strip()
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(answer.split())}
        return web.json_response(
            {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}], "usage": usage}
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def server_started(latency: float) -> tuple[subprocess.Popen, str]:
    import socket

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port), "--latency", str(latency)], stdout=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the chat server did not start")


# --- the reference ------------------------------------------------------------------------------


async def plain_client(url: str, bodies: list[bytes], in_flight: int) -> float:
    """The same request bodies at the same concurrency, each answer read as JSON; seconds."""
    import aiohttp

    pending = iter(bodies)
    started = time.perf_counter()
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=in_flight)) as session:

        async def worker():
            for body in pending:
                async with session.post(url + "/chat/completions", data=body, headers=headers) as answer:
                    json.loads(await answer.read())

        await asyncio.gather(*(worker() for _ in range(in_flight)))
    return time.perf_counter() - started


def request_bodies(experiment) -> list[bytes]:
    """The bodies the experiment's generator sends, made by the same functions, for the plain client."""
    from answers import contexts as ctx
    from answers.experiments import experiment_queries
    from answers.generation import prompt_filled
    from evaluation.selectors import run_ranked
    from goldenset.models import Query

    generator = experiment.generator
    queries = experiment_queries(experiment)
    texts = dict(Query.objects.filter(pk__in=queries).values_list("pk", "text"))
    oracle = ctx.oracle_contexts(experiment.version, queries, k_final=experiment.k_final, budget=experiment.context_token_budget)
    retrieved = ctx.retrieved_contexts(
        run_ranked(experiment.run), queries, chunked=False, k_final=experiment.k_final, budget=experiment.context_token_budget
    )
    bodies = []
    for q in queries:
        for context in (oracle[q], retrieved[q], ctx.CLOSED_BOOK):
            messages = [{"role": "user", "content": prompt_filled(generator.prompt, texts[q], context.passages)}]
            bodies.append(json.dumps({"model": generator.model, "messages": messages, "temperature": generator.temperature}).encode())
    return bodies


# --- the data -----------------------------------------------------------------------------------


def golden_set_made(slug: str, queries: int, url: str, in_flight: int):
    from answers.generation import DEFAULT_PROMPT
    from answers.models import Generator
    from evaluation.services import run_import
    from goldenset.answers import answers_import
    from goldenset.models import GoldenSet
    from goldenset.services import GoldenSetSource, golden_set_create, version_publish
    from lib.formats import JsonRecord
    from lib.hashing import text_hash

    query_ids = [f"q{n}" for n in range(queries)]
    pages, qrels, run_lines, answers = [], {}, [], []
    for n, q in enumerate(query_ids):
        for i in range(PAGES_PER_QUERY):
            doc = f"p{n}-{i}"
            text = f"Page {doc} is about topic {n}. The code of topic {n} is C{n}X{i}. It has nothing else to say about it."
            pages.append(JsonRecord(line=len(pages) + 1, id=doc, title=f"topic {n}", text=text))
        qrels[(q, f"p{n}-0")] = 2
        qrels[(q, f"p{n}-1")] = 1
        ranked = [f"p{n}-{i}" for i in (2, 0, 3, 1)] + [f"p{(n + k) % queries}-0" for k in range(1, DEPTH - PAGES_PER_QUERY + 1)]
        run_lines += [f"{q} Q0 {doc} {rank} {100 - rank} bench\n" for rank, doc in enumerate(ranked, start=1)]
        answers.append(json.dumps({"query_id": q, "answer": f"C{n}X0"}))
    records = [JsonRecord(line=n + 1, id=q, text=f"What is the code of topic {n}?") for n, q in enumerate(query_ids)]
    golden_set_create(
        slug=slug, name=slug, source=GoldenSetSource(pages=pages, queries=records, qrels=qrels, k_first=DEPTH, k_final=K_FINAL)
    )
    golden_set = GoldenSet.objects.get(slug=slug)
    answers_import(golden_set=golden_set, path_or_lines=answers, user=None)
    version_publish(golden_set=golden_set, note="bench")
    run_import(golden_set=golden_set, lines=run_lines, source_name="bench.run", system="bench", stage="reranked", name="bench")
    Generator.objects.create(
        golden_set=golden_set,
        name="local",
        base_url=url,
        model="bench",
        prompt=DEFAULT_PROMPT,
        prompt_hash=text_hash(DEFAULT_PROMPT),
        max_in_flight=in_flight,
        timeout_seconds=60,
        retries=0,
    )
    return golden_set


def experiment_made(slug: str):
    from answers.experiments import oracle_experiment_submit
    from answers.models import Generator
    from evaluation.models import Run
    from goldenset.models import GoldenSet

    golden_set = GoldenSet.objects.get(slug=slug)
    return oracle_experiment_submit(
        golden_set=golden_set,
        version=golden_set.latest_version(),
        run=Run.objects.get(golden_set=golden_set, name="bench"),
        generator=Generator.objects.get(golden_set=golden_set, name="local"),
        closed_book=True,
        user=None,
        send=None,
    )


# --- one experiment in a fresh process (for its memory) -----------------------------------------


def experiment_in_process(slug: str) -> None:
    """Run one experiment of `slug`; print {"seconds", "peak_above_start", "answers"}."""
    import aiohttp  # noqa: F401 - imported before the start is read, as a worker has it

    from answers.experiments import oracle_experiment_run
    from answers.report import experiment_report

    experiment = experiment_made(slug)
    start = peak_memory(os.getpid())
    started = time.perf_counter()
    experiment = oracle_experiment_run(experiment.pk)
    seconds = time.perf_counter() - started
    assert experiment.status == "done" and experiment.answers_failed == 0, experiment.error
    experiment_report(experiment)
    print(json.dumps({"seconds": seconds, "peak_above_start": peak_memory(os.getpid()) - start, "answers": experiment.answers_done}))


def fresh_experiment(args, slug: str) -> dict:
    command = [sys.executable, __file__, "--experiment", slug, "--database-url", args.database_url]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "BENCH_QUEUE": args.queue})
    if done.returncode:
        raise SystemExit(f"the experiment of {slug} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the chat server holds each answer")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--experiment", help=argparse.SUPPRESS)
    database_url_argument(parser, "goldset_bench_oracle")
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve, args.latency)
    args.queue = os.environ.get("BENCH_QUEUE") or f"bench-oracle-{uuid.uuid4().hex[:8]}"
    environ = {"CELERY_BROKER_URL": BROKER, "CELERY_TASK_DEFAULT_QUEUE": args.queue, "DEBUG": "false"}
    if args.experiment:
        django_setup(args.database_url, **environ)
        return experiment_in_process(args.experiment)

    server, url = server_started(args.latency)
    try:
        with scratch_database(args.database_url):
            django_setup(args.database_url, **environ)
            from django.core.management import call_command

            call_command("migrate", verbosity=0)
            bench(args, url)
    finally:
        server.kill()
        purge_queue(BROKER, args.queue)


def bench(args, url: str) -> None:
    from answers.experiments import oracle_experiment_run
    from answers.report import experiment_report

    answers = args.queries * 3
    print(
        f"data: {args.queries:,} queries x 3 contexts (oracle, retrieved, closed book) = {answers:,} answers, k_final {K_FINAL}, "
        f"{args.queries * PAGES_PER_QUERY:,} pages; {args.in_flight} requests in flight; the chat server holds each answer "
        f"{args.latency * 1000:.0f} ms; Python {sys.version.split()[0]}",
        flush=True,
    )
    made = time.perf_counter()
    golden_set_made("oracle-big", args.queries, url, args.in_flight)
    golden_set_made("oracle-small", args.small, url, args.in_flight)
    print(f"  (sets made in {time.perf_counter() - made:.0f} s)", flush=True)
    bodies = request_bodies(experiment_made("oracle-big"))
    assert len(bodies) == answers

    ours, theirs = [], []
    for round_number in range(1, args.rounds + 1):
        theirs.append(asyncio.run(plain_client(url, bodies, args.in_flight)))
        experiment = experiment_made("oracle-big")
        started = time.perf_counter()
        experiment = oracle_experiment_run(experiment.pk)
        ours.append(time.perf_counter() - started)
        assert experiment.status == "done" and experiment.answers_done == answers, (experiment.status, experiment.error)
        print(f"  round {round_number}: plain client {theirs[-1]:.2f} s, Goldset experiment {ours[-1]:.2f} s", flush=True)
    report = experiment_report(experiment)
    figures = report.overall.contexts
    print(
        "  its report: exact match oracle {:.3f}, retrieved {:.3f}, closed book {:.3f} (the server echoes the question: all 0, "
        "as expected); {:,} requests, {:,} prompt tokens".format(
            figures["oracle"].exact_match.value,
            figures["retrieved"].exact_match.value,
            figures["closed_book"].exact_match.value,
            experiment.requests,
            experiment.prompt_tokens,
        )
    )
    goldset_s, plain_s = statistics.median(ours), statistics.median(theirs)
    ratio = goldset_s / plain_s
    print(
        f"oracle experiment, {answers:,} answers: Goldset {goldset_s:.2f} s, plain aiohttp client {plain_s:.2f} s: "
        f"{ratio:.2f}x (target <= {TARGET_RATIO}x) {'PASS' if ratio <= TARGET_RATIO else 'MISS'}"
    )
    print(f"  throughput: Goldset {answers / goldset_s:,.0f} answers/s, plain client {answers / plain_s:,.0f} requests/s")

    small, big = fresh_experiment(args, "oracle-small"), fresh_experiment(args, "oracle-big")
    mib = 1024 * 1024
    grown = big["peak_above_start"] / max(small["peak_above_start"], 1)
    print(
        f"memory of an experiment in a fresh process, peak above its start: {args.small:,} queries ({small['answers']:,} answers) "
        f"{small['peak_above_start'] / mib:.1f} MiB, {args.queries:,} queries ({big['answers']:,} answers) "
        f"{big['peak_above_start'] / mib:.1f} MiB: {grown:.2f}x for {args.queries / args.small:.0f}x the queries "
        f"(target <= {MEMORY_TARGET}x: flat in the queries) {'PASS' if grown <= MEMORY_TARGET else 'MISS'}"
    )


if __name__ == "__main__":
    main()
