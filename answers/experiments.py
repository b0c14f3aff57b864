"""The oracle experiment as a background job (lib.background_jobs, as labeling's judge jobs).

`oracle_experiment_submit` checks every field (each fault names its field), records the
experiment with the version's k_final and the set's token budget, and sends the task the
caller hands in (answers.tasks.oracle_experiment_task; this module never imports the tasks)
once the transaction commits; None runs nothing (the command runs it in process, the same
runner). `oracle_experiment_run` claims it (queued -> running) and answers its queries block
after block, each block's answers written in one transaction as they settle, with exact
match and token F1 against the version's reference answer computed at write. So a stop (a
worker lost, the budget spent) keeps what was written, and a run again answers only what
is missing: an answer is never asked for or scored twice. An answer that failed (the
generator down, 429/500 past its retries, garbage) is kept with its error and asked again
by the next run. Then the answer judge, when there is one, grades the answers (of the queries
with a reference answer) that have no grade of its rubric yet, as AnswerGrade(source=model) rows, resumable the same way.

Bounds: before each block the manager's budget is checked (requests, and dollars at the
generator's and the judge's prices); a block is no larger than the requests left, and no
larger than the dollars left buy at the cost per request seen so far, so a job ends at its
budget up to one block's estimate. A job that reaches it stops with status "stopped" and a
note; `oracle_experiment_continue` (with a larger budget, or none) queues it again.

The sample is drawn from the version's queries in natural order with the experiment's seed,
so a run again (or a second experiment with the same seed) draws the same queries. Every
sampled query is answered; only those with a reference answer count in the EM/F1 means.
"""

import logging
from collections.abc import Iterable
from datetime import timedelta
from decimal import Decimal

import numpy as np
from celery import Task
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F

from answers import contexts as ctx
from answers.answer_judging import AnswerToGrade, grade_answers
from answers.generation import AnswerRequest, context_text, generate_answers
from answers.models import AnswerGrade, AnswerJudge, GeneratedAnswer, Generator, OracleExperiment
from evaluation.models import Run
from evaluation.selectors import run_ranked
from goldenset.answers import version_reference_answers
from goldenset.models import GoldenSet, Query, Version, VersionQuery
from lib.answer_metrics import best_scores
from lib.background_jobs import NO_HOLDER, Holder, JobKind, job_finish, job_run, job_send_on_commit, jobs_sweep
from lib.errors import GoldsetError, ProblemCollector
from lib.ids import natural_key
from lib.llm_judging import cost

logger = logging.getLogger(__name__)

SEND_AGAIN_AFTER = timedelta(minutes=10)
GIVE_UP_AFTER = timedelta(hours=6)
# Answers (a query with one context) read and asked in one block, per request in flight:
# enough that the workers seldom wait for the block's last answers (bench/oracle.py), few
# enough that a stop loses little and memory stays flat in the experiment's size.
ITEMS_PER_WORKER = 32
MAX_SAMPLE = 1_000_000
# A sweep job answers the retrieved context once per k: more than this is a budget mistake.
MAX_SWEEP_DEPTHS = 32

EXPERIMENT_JOBS = JobKind(
    OracleExperiment,
    send_again_after=SEND_AGAIN_AFTER,
    give_up_after=GIVE_UP_AFTER,
    stopped="its answers are kept: continue it to answer the rest",
)


def oracle_experiment_check(
    *,
    golden_set: GoldenSet,
    version: Version | None,
    run: Run | None,
    generator: Generator | None,
    judge: AnswerJudge | None,
    sample_size: int | None,
    seed: int,
    budget_dollars: Decimal | None,
    max_requests: int | None,
    k_final: int | None = None,
    context_token_budget: int | None = None,
    k_sweep: list[int] | None = None,
) -> None:
    """Every fault of the fields at once (GoldsetError, problems "field: why")."""
    problems = ProblemCollector()
    slug = golden_set.slug
    if version is None or version.golden_set_id != golden_set.pk:
        problems.add(f"version: golden set {slug!r} has no such version (publish one first)")
    if run is None or run.golden_set_id != golden_set.pk:
        problems.add(f"run: golden set {slug!r} has no such run")
    if generator is None or generator.golden_set_id != golden_set.pk:
        problems.add(f"generator: golden set {slug!r} has no such generator")
    if judge is not None and judge.golden_set_id != golden_set.pk:
        problems.add(f"judge: the answer judge {judge.name!r} is not one of golden set {slug!r}'s")
    if sample_size is not None and (isinstance(sample_size, bool) or not 1 <= sample_size <= MAX_SAMPLE):
        problems.add(f"sample: from 1 to {MAX_SAMPLE} queries (leave it empty for all of the version's), got {sample_size!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        problems.add(f"seed: a whole number from 0 to {2**31 - 1}, got {seed!r}")
    if budget_dollars is not None:
        if not isinstance(budget_dollars, Decimal) or not budget_dollars.is_finite() or budget_dollars <= 0:
            problems.add(f"budget: a positive number of dollars, got {budget_dollars!r}")
        elif generator is not None and generator.price_in is None and generator.price_out is None:
            problems.add(
                f"budget: the generator {generator.name!r} has no prices, so no dollars can be counted: give it prices or bound the requests"
            )
    if max_requests is not None and (isinstance(max_requests, bool) or not isinstance(max_requests, int) or max_requests < 1):
        problems.add(f"max_requests: at least 1 request, got {max_requests!r}")
    if k_final is not None:
        # Up to k_first: the depth-and-cost sweep reads a run's recall curve that far, and an
        # experiment at another k_final is a point of answer accuracy on it.
        top = version.k_first if version is not None else None
        if isinstance(k_final, bool) or not isinstance(k_final, int) or k_final < 1 or (top is not None and k_final > top):
            problems.add(f"k_final: pages in the retrieved context, from 1 to the version's k_first ({top}), got {k_final!r}")
    if k_sweep:
        top = version.k_first if version is not None else None
        bad = [k for k in k_sweep if isinstance(k, bool) or not isinstance(k, int) or k < 1 or (top is not None and k > top)]
        if bad:
            problems.add(f"k_sweep: each k from 1 to the version's k_first ({top}), got {', '.join(map(repr, bad))}")
        elif len(set(k_sweep)) > MAX_SWEEP_DEPTHS:
            problems.add(f"k_sweep: at most {MAX_SWEEP_DEPTHS} values of k (each is a pass over the queries), got {len(set(k_sweep))}")
    if context_token_budget is not None and (
        isinstance(context_token_budget, bool) or not isinstance(context_token_budget, int) or context_token_budget < 1
    ):
        problems.add(f"context_token_budget: at least 1 token (leave it empty for the set's), got {context_token_budget!r}")
    problems.raise_if_any("the oracle experiment cannot start")


def oracle_experiment_submit(
    *,
    golden_set: GoldenSet,
    version: Version | None,
    run: Run | None,
    generator: Generator | None,
    judge: AnswerJudge | None = None,
    closed_book: bool = False,
    sample_size: int | None = None,
    seed: int = 0,
    budget_dollars: Decimal | None = None,
    max_requests: int | None = None,
    k_final: int | None = None,
    context_token_budget: int | None = None,
    k_sweep: list[int] | None = None,
    user: AbstractBaseUser | None,
    send: Task | None,
) -> OracleExperiment:
    """Record an experiment and send it through `send` once the caller's transaction commits
    (None: the caller runs it, as the command does). `k_final` (default: the version's) is
    the pages of the retrieved and the oracle context, `context_token_budget` (default: the
    set's) the tokens they may hold: an experiment at another k is a point of the run's
    depth-and-cost sweep, one with a short budget shows what the generator loses.
    `k_sweep` makes it a sweep job: the retrieved context answered again at each of those
    k (k_final's answers are the experiment's own), the oracle and closed-book ones once."""
    oracle_experiment_check(
        golden_set=golden_set,
        version=version,
        run=run,
        generator=generator,
        judge=judge,
        sample_size=sample_size,
        seed=seed,
        budget_dollars=budget_dollars,
        max_requests=max_requests,
        k_final=k_final,
        context_token_budget=context_token_budget,
        k_sweep=k_sweep,
    )
    k_final = k_final or version.k_final
    with transaction.atomic():
        experiment = OracleExperiment.objects.create(
            golden_set=golden_set,
            version=version,
            run=run,
            generator=generator,
            judge=judge,
            closed_book=bool(closed_book),
            sample_size=sample_size,
            seed=seed,
            k_final=k_final,
            k_sweep=sorted(set(k_sweep or []) - {k_final}),
            context_token_budget=context_token_budget or golden_set.context_token_budget,
            tokens_per_page=golden_set.tokens_per_page,
            budget_dollars=budget_dollars,
            max_requests=max_requests,
            created_by=user,
        )
        if send is not None:
            job_send_on_commit(OracleExperiment, experiment.pk, send)
    return experiment


def oracle_experiment_continue(
    *,
    experiment: OracleExperiment,
    budget_dollars: Decimal | None = None,
    max_requests: int | None = None,
    user: AbstractBaseUser | None,
    send: Task | None,
) -> OracleExperiment:
    """Queue a stopped or failed experiment again, with the budget given (None: unbounded);
    its run answers only what is missing. Refused while it is queued or running."""
    if experiment.status not in (OracleExperiment.Status.STOPPED, OracleExperiment.Status.FAILED, OracleExperiment.Status.DONE):
        raise GoldsetError(f"oracle experiment {experiment.pk} is {experiment.status}: only a stopped, failed or done one is continued")
    oracle_experiment_check(
        golden_set=experiment.golden_set,
        version=experiment.version,
        run=experiment.run,
        generator=experiment.generator,
        judge=experiment.judge,
        sample_size=experiment.sample_size,
        seed=experiment.seed,
        budget_dollars=budget_dollars,
        max_requests=max_requests,
    )
    with transaction.atomic():
        updated = OracleExperiment.objects.filter(pk=experiment.pk, status=experiment.status).update(
            status=OracleExperiment.Status.QUEUED,
            budget_dollars=budget_dollars,
            max_requests=max_requests,
            progress_note="",
            error="",
            enqueued_at=None,
            started_at=None,
            finished_at=None,
        )
        if not updated:
            raise GoldsetError(f"oracle experiment {experiment.pk} changed meanwhile: read it again")
        if send is not None:
            job_send_on_commit(OracleExperiment, experiment.pk, send)
    experiment.refresh_from_db()
    return experiment


def experiment_contexts(experiment: OracleExperiment) -> list[str]:
    """The contexts the experiment answers with, in the report's order."""
    kinds = [GeneratedAnswer.Context.ORACLE, GeneratedAnswer.Context.RETRIEVED]
    return kinds + [GeneratedAnswer.Context.CLOSED_BOOK] if experiment.closed_book else kinds


def experiment_slots(experiment: OracleExperiment) -> list[tuple[str, int]]:
    """What the job answers each query with: (context, sweep_k) for its own contexts (0),
    then the retrieved context at each further k of a sweep."""
    own = [(kind, 0) for kind in experiment_contexts(experiment)]
    return own + [(GeneratedAnswer.Context.RETRIEVED, k) for k in experiment.k_sweep if k != experiment.k_final]


def experiment_queries(experiment: OracleExperiment) -> list[int]:
    """The pks of the experiment's queries: the version's in natural query-id order, or the
    seeded sample of them (kept in that order)."""
    rows = sorted(
        VersionQuery.objects.filter(version_id=experiment.version_id).values_list("query__query_id", "query_id"),
        key=lambda r: natural_key(r[0]),
    )
    pks = [pk for _, pk in rows]
    if experiment.sample_size is not None and experiment.sample_size < len(pks):
        chosen = np.sort(np.random.default_rng(experiment.seed).choice(len(pks), size=experiment.sample_size, replace=False))
        pks = [pks[i] for i in chosen.tolist()]
    return pks


def reference_truths(version: Version, query_pks: Iterable[int] | None = None) -> dict[int, list[str]]:
    """{query pk: [its reference answer, *aliases]}: what exact match and token F1 take the best over."""
    return {pk: [text.answer, *text.aliases] for pk, text in version_reference_answers(version, query_pks).items()}


def oracle_experiment_run(experiment_id: int, *, holder: Holder = NO_HOLDER, on_block=None) -> OracleExperiment | None:
    """Claim the experiment for `holder` and answer (then grade) what it misses; None when it
    is gone or claimed already. `on_block(experiment)` runs after each block is written
    (the command prints progress)."""

    def work(experiment: OracleExperiment) -> dict | None:
        if _answer(experiment, on_block) and (experiment.judge_id is None or _grade(experiment, on_block)):
            return {"error": "", "progress_note": ""}
        return None  # stopped at its budget: _stop finished it

    experiment = job_run(
        EXPERIMENT_JOBS,
        experiment_id,
        holder=holder,
        work=work,
        load=lambda pk: OracleExperiment.objects.select_related("golden_set", "version", "run", "generator", "judge").get(pk=pk),
        refused=lambda exc: {"error": exc.message + "; what it answered is kept: continue it"},
        broke=lambda exc: {"error": f"the job stopped on an internal error ({type(exc).__name__}); what it answered is kept: continue it"},
    )
    if experiment is not None:
        experiment.refresh_from_db()
    return experiment


def _spent(experiment: OracleExperiment) -> tuple[int | None, Decimal | None]:
    """What is left of the budget: (requests, dollars), None where unbounded."""
    experiment.refresh_from_db(fields=["requests", "cost"])
    requests = None if experiment.max_requests is None else experiment.max_requests - experiment.requests
    dollars = None if experiment.budget_dollars is None else experiment.budget_dollars - experiment.cost
    return requests, dollars


def _block_size(experiment: OracleExperiment, wanted: int, in_flight: int) -> int:
    """How many items the next block may hold under the budget (0: it is spent): no more
    than the requests left (an item takes one at least), nor than the dollars left buy at
    the cost of a request so far; before any request is counted, a dollar budget lets one
    request per worker (`in_flight`) go first, to learn what one costs."""
    requests, dollars = _spent(experiment)
    size = wanted
    if requests is not None:
        size = min(size, requests)
    if dollars is not None:
        if dollars <= 0:
            return 0
        if not experiment.requests:
            size = min(size, in_flight)
        else:
            # The dollars a request cost so far stand for the next ones: the block buys what is left.
            each = experiment.cost / experiment.requests
            if each > 0:
                size = min(size, int(dollars / each))
    return max(size, 0)


def _stop(experiment: OracleExperiment, what: str) -> None:
    requests, dollars = _spent(experiment)
    spent = []
    if experiment.max_requests is not None:
        spent.append(f"{experiment.requests} of {experiment.max_requests} requests")
    if experiment.budget_dollars is not None:
        spent.append(f"${experiment.cost} of ${experiment.budget_dollars}")
    note = f"stopped {what}: the budget is spent ({', '.join(spent)}); what was done is kept: continue it with a larger budget"
    job_finish(EXPERIMENT_JOBS, experiment, status=OracleExperiment.Status.STOPPED, progress_note=note[:500])


def _answer(experiment: OracleExperiment, on_block) -> bool:
    """Answer what is missing, a block of queries at a time (what is done is read per block,
    so the worker holds a block's answers, not the experiment's); False when the budget
    stopped it."""
    generator = experiment.generator
    kinds = experiment_slots(experiment)
    queries = experiment_queries(experiment)
    done_count = experiment.answers.filter(error="").count()
    OracleExperiment.objects.filter(pk=experiment.pk).update(
        queries_total=len(queries),
        answers_total=len(queries) * len(kinds),
        answers_done=done_count,
        answers_failed=experiment.answers.exclude(error="").count(),
    )
    if done_count >= len(queries) * len(kinds):
        return True
    ranked = run_ranked(experiment.run)
    block = max(1, generator.max_in_flight * ITEMS_PER_WORKER)
    per_block = max(1, block // len(kinds))
    for first in range(0, len(queries), per_block):
        chunk = queries[first : first + per_block]
        done = set(experiment.answers.filter(error="", query_id__in=chunk).values_list("query_id", "context", "sweep_k"))
        missing = [(q, kind, k) for q in chunk for kind, k in kinds if (q, kind, k) not in done]
        position = 0
        while position < len(missing):
            size = _block_size(experiment, block, generator.max_in_flight)
            if size == 0:
                _stop(experiment, "answering")
                return False
            items = missing[position : position + size]
            position += size
            _answer_block(experiment, items, ranked)
            if on_block is not None:
                experiment.refresh_from_db()
                on_block(experiment)
    return True


def _contexts(experiment: OracleExperiment, ranked, query_pks: list[int], slots) -> dict[tuple[str, int], dict[int, ctx.Context]]:
    """{(kind, sweep_k): {query pk: its context}} for the queries of a block (answers.contexts);
    sweep_k 0 is the experiment's k_final."""
    budget = experiment.context_token_budget
    by_kind = {
        GeneratedAnswer.Context.ORACLE: lambda k: ctx.oracle_contexts(experiment.version, query_pks, k_final=k, budget=budget),
        GeneratedAnswer.Context.RETRIEVED: lambda k: ctx.retrieved_contexts(
            ranked, query_pks, chunked=experiment.run.chunking_id is not None, k_final=k, budget=budget
        ),
        GeneratedAnswer.Context.CLOSED_BOOK: lambda _k: dict.fromkeys(query_pks, ctx.CLOSED_BOOK),
    }
    return {(kind, k): by_kind[kind](k or experiment.k_final) for kind, k in set(slots)}


def _answer_block(experiment: OracleExperiment, items: list[tuple[int, str, int]], ranked) -> None:
    query_pks = sorted({q for q, _, _ in items})
    # The block's reference answers only: the worker holds a block's texts, not the experiment's.
    references = reference_truths(experiment.version, query_pks)
    contexts = _contexts(experiment, ranked, query_pks, [(kind, k) for _, kind, k in items])
    questions = dict(Query.objects.filter(pk__in=query_pks).values_list("pk", "text"))
    asked = {(q, kind, k): contexts[kind, k][q] for q, kind, k in items}
    requests = [AnswerRequest(key, questions.get(key[0], ""), context.passages) for key, context in asked.items()]
    generate_answers(experiment.generator, requests, progress=lambda results, _note: _write_answers(experiment, results, asked, references))


def _write_answers(experiment: OracleExperiment, results, asked: dict, references: dict[int, list[str]]) -> None:
    rows, spent_in, spent_out, requests = [], 0, 0, 0
    for r in results:
        q, kind, k = r.key
        context = asked[r.key]
        em = f1 = None
        if r.error is None and q in references:
            em, f1 = best_scores(r.text, references[q])
        rows.append(
            GeneratedAnswer(
                experiment=experiment,
                query_id=q,
                context=kind,
                sweep_k=k,
                context_ids=list(context.ids),
                context_tokens=context.tokens,
                prompt_hash=r.prompt_hash,
                text="" if r.error else (r.text or ""),
                error=r.error or "",
                raw=(r.raw or "").replace("\x00", "")[:4000],
                requests=r.requests,
                prompt_tokens=r.prompt_tokens,
                completion_tokens=r.completion_tokens,
                exact_match=em,
                token_f1=f1,
            )
        )
        spent_in += r.prompt_tokens
        spent_out += r.completion_tokens
        requests += r.requests
    generator = experiment.generator
    money = cost(spent_in, spent_out, generator.price_in, generator.price_out) or Decimal(0)
    keys = [(row.query_id, row.context, row.sweep_k) for row in rows]
    with transaction.atomic():
        # A failed answer of an earlier run is replaced by this one; an answer that settled
        # meanwhile (a second run of the same experiment) is kept and this one dropped.
        keyset = set(keys)
        failed = experiment.answers.exclude(error="").filter(query_id__in={q for q, _, _ in keys})
        experiment.answers.filter(
            pk__in=[pk for pk, *key in failed.values_list("pk", "query_id", "context", "sweep_k") if tuple(key) in keyset]
        ).delete()
        GeneratedAnswer.objects.bulk_create(rows, ignore_conflicts=True)
        # Counted from the rows, not added up: a row dropped as a twin must not count twice.
        OracleExperiment.objects.filter(pk=experiment.pk).update(
            answers_done=experiment.answers.filter(error="").count(),
            answers_failed=experiment.answers.exclude(error="").count(),
            requests=F("requests") + requests,
            prompt_tokens=F("prompt_tokens") + spent_in,
            completion_tokens=F("completion_tokens") + spent_out,
            cost=F("cost") + money,
        )


def _grade(experiment: OracleExperiment, on_block) -> bool:
    """Grade the answers the judge has no grade of yet; False when the budget stopped it."""
    judge = experiment.judge
    graded = AnswerGrade.objects.filter(
        answer__experiment=experiment, source=AnswerGrade.Source.MODEL, judge=judge, rubric_hash=judge.rubric_hash
    )
    OracleExperiment.objects.filter(pk=experiment.pk).update(grades_done=graded.exclude(grade="").count())
    taken = set(graded.exclude(grade="").values_list("answer_id", flat=True))
    references = reference_truths(experiment.version)
    # Only answers to a query with a reference answer: a grade is against one.
    answered = experiment.answers.filter(error="", query_id__in=list(references)).order_by("pk").values_list("pk", flat=True)
    pending = [pk for pk in answered if pk not in taken]
    ranked = None
    block = max(1, judge.max_in_flight * ITEMS_PER_WORKER)
    position = 0
    while position < len(pending):
        size = _block_size(experiment, block, judge.max_in_flight)
        if size == 0:
            _stop(experiment, "grading")
            return False
        pks = pending[position : position + size]
        position += size
        answers = list(experiment.answers.filter(pk__in=pks).select_related("query").order_by("pk"))
        if ranked is None and any(a.context == GeneratedAnswer.Context.RETRIEVED for a in answers):
            ranked = run_ranked(experiment.run)
        # The judge reads the context the answer was made with: made again, as it was (the
        # same version, run and bounds make the same passages).
        slots = [(a.context, a.sweep_k) for a in answers]
        contexts = _contexts(experiment, ranked, sorted({a.query_id for a in answers}), slots)
        items = []
        for a in answers:
            truths = references[a.query_id]
            passages = contexts[a.context, a.sweep_k][a.query_id].passages
            items.append(
                AnswerToGrade(a.pk, a.query.text, truths[0], tuple(truths[1:]), a.text, context_text(passages) if passages else "")
            )
        grade_answers(judge, items, progress=lambda results, _note: _write_grades(experiment, results))
        if on_block is not None:
            experiment.refresh_from_db()
            on_block(experiment)
    return True


def _write_grades(experiment: OracleExperiment, results) -> None:
    judge = experiment.judge
    rows = [
        AnswerGrade(
            answer_id=r.key,
            source=AnswerGrade.Source.MODEL,
            judge=judge,
            rubric_hash=judge.rubric_hash,
            grade=r.grade or "",
            supported=r.supported,
            raw=(r.raw or "").replace("\x00", "")[:4000],
            error=r.error or "",
            requests=r.requests,
            prompt_tokens=r.prompt_tokens,
            completion_tokens=r.completion_tokens,
        )
        for r in results
    ]
    spent_in = sum(r.prompt_tokens for r in results)
    spent_out = sum(r.completion_tokens for r in results)
    money = cost(spent_in, spent_out, judge.price_in, judge.price_out) or Decimal(0)
    with transaction.atomic():
        # A grade that could not be read is kept with its error until a later run reads one.
        AnswerGrade.objects.filter(
            answer_id__in=[row.answer_id for row in rows], judge=judge, rubric_hash=judge.rubric_hash, grade=""
        ).delete()
        AnswerGrade.objects.bulk_create(rows, ignore_conflicts=True)
        OracleExperiment.objects.filter(pk=experiment.pk).update(
            grades_done=AnswerGrade.objects.filter(answer__experiment=experiment, judge=judge, rubric_hash=judge.rubric_hash)
            .exclude(grade="")
            .count(),
            requests=F("requests") + sum(r.requests for r in results),
            prompt_tokens=F("prompt_tokens") + spent_in,
            completion_tokens=F("completion_tokens") + spent_out,
            cost=F("cost") + money,
        )


def oracle_experiments_sweep(*, job_task: Task, now=None, sweeper: Task | None = None) -> tuple[int, int]:
    """Send again the experiments whose message was lost or whose holder is gone, fail those
    running past GIVE_UP_AFTER (lib.background_jobs); their answers stay. (sent again, failed)."""
    return jobs_sweep(EXPERIMENT_JOBS, job_task=job_task, now=now, sweeper=sweeper)
