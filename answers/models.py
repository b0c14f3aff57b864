"""Answers: how a team makes an answer from a question and a context (a generator), the
oracle experiment that answers each query with the version's relevant pages and with a
run's top k_final and grades both against the reference answers, and the grades.

Generated answers and their grades are a source of their own: they never change a human
label, a version or a recall score (SEMANTICS.md, "Answers").
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from evaluation.models import Run
from goldenset.models import GoldenSet, Query, Version
from lib.job_fields import JobRunnerFields


class Generator(models.Model):
    """How a team produces an answer: of kind `openai`, a model behind an OpenAI-compatible
    chat endpoint (`base_url` ends in /v1) with a prompt template holding {{question}} and
    {{context}}; of kind `endpoint`, the team's own RAG answer endpoint, its request made
    like a retrieval endpoint's (`request`: the spec monitoring.endpoints.spec reads, with
    {{query}} and {{context}}) and `answer_path` saying where the answer's text is.

    The API key is not here: `api_key_env` names the variable the worker reads it from.
    Prices are the manager's figures, per million tokens."""

    class Kind(models.TextChoices):
        OPENAI = "openai", "an OpenAI-compatible chat endpoint"
        ENDPOINT = "endpoint", "the team's own answer endpoint"

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="generators")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.OPENAI)
    base_url = models.CharField(max_length=500, blank=True, help_text="an OpenAI-compatible API's base URL, ending in /v1")
    model = models.CharField(max_length=200, blank=True)
    prompt = models.TextField(blank=True, help_text="the template: {{question}} and {{context}} are filled in")
    prompt_hash = models.CharField(max_length=64, blank=True)
    temperature = models.FloatField(default=0.0)
    api_key_env = models.CharField(max_length=100, blank=True, help_text="the variable holding the API key, never the key")
    max_in_flight = models.PositiveSmallIntegerField(default=4)
    timeout_seconds = models.FloatField(default=60.0)
    retries = models.PositiveSmallIntegerField(default=3)
    # Kind `endpoint`: the request as a retrieval endpoint's spec, and where the answer is.
    request = models.JSONField(default=dict, blank=True)
    answer_path = models.CharField(max_length=500, blank=True, help_text="where the answer's text is in the endpoint's JSON")
    price_in = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True, help_text="per million input tokens")
    price_out = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True, help_text="per million output tokens")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["golden_set", "name"]
        constraints = [models.UniqueConstraint(fields=["golden_set", "name"], name="generator_name_unique_in_set")]

    def __str__(self) -> str:
        return self.name


class AnswerJudge(models.Model):
    """A model behind an OpenAI-compatible chat endpoint that grades a generated answer
    against the reference with a rubric (correct, partly, wrong; supported by its context or
    not). The rubric is kept by its hash: an edit is a new hash, its grades apart."""

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="answer_judges")
    name = models.CharField(max_length=100)
    base_url = models.CharField(max_length=500)
    model = models.CharField(max_length=200)
    rubric = models.TextField()
    rubric_hash = models.CharField(max_length=64)
    api_key_env = models.CharField(max_length=100, blank=True)
    max_in_flight = models.PositiveSmallIntegerField(default=4)
    timeout_seconds = models.FloatField(default=60.0)
    retries = models.PositiveSmallIntegerField(default=3)
    price_in = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    price_out = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["golden_set", "name"]
        constraints = [models.UniqueConstraint(fields=["golden_set", "name"], name="answer_judge_name_unique_in_set")]

    def __str__(self) -> str:
        return self.name


class OracleExperiment(JobRunnerFields):
    """For one version and one run: each query (or a seeded sample of them) answered by the
    generator with the oracle context (the version's relevant pages, best grade first, cut
    to k_final and the token budget), with the retrieved context (the run's top k_final in
    rank order) and, when asked, with none; then graded against the reference answers.

    A background job (lib.background_jobs): it writes its answers as they settle, so a stop
    (a worker lost, the budget spent) keeps them and a run again continues with what is
    missing, scoring nothing twice. `status` "stopped" is a budget spent: resumable."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        STOPPED = "stopped", "stopped: the budget is spent"
        FAILED = "failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="oracle_experiments")
    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="+")
    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="oracle_experiments")
    generator = models.ForeignKey(Generator, on_delete=models.PROTECT, related_name="experiments")
    judge = models.ForeignKey(AnswerJudge, null=True, blank=True, on_delete=models.PROTECT, related_name="experiments")
    closed_book = models.BooleanField(default=False, help_text="answer also without any context")
    sample_size = models.PositiveIntegerField(null=True, blank=True, help_text="answer this many queries, drawn at random")
    seed = models.PositiveIntegerField(default=0)
    k_final = models.PositiveIntegerField()
    # A sweep job: the retrieved context answered again at each of these depths (the oracle
    # and closed-book contexts once, at k_final), so the depth-and-cost sweep has answer
    # accuracy at several k from one job, its requests and budget counted once.
    k_sweep = models.JSONField(default=list, blank=True, help_text="further k the retrieved context is answered at")
    context_token_budget = models.PositiveIntegerField(null=True, blank=True)
    tokens_per_page = models.PositiveIntegerField(default=400)
    # The manager's bounds: the job stops (resumable) before passing either.
    budget_dollars = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    max_requests = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    queries_total = models.PositiveIntegerField(default=0)
    answers_total = models.PositiveIntegerField(default=0)
    answers_done = models.PositiveIntegerField(default=0)
    answers_failed = models.PositiveIntegerField(default=0)
    grades_done = models.PositiveIntegerField(default=0)
    requests = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    progress_note = models.CharField(max_length=500, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "enqueued_at"], name="oracle_experiment_sweep")]

    def __str__(self) -> str:
        return f"oracle experiment {self.pk} of {self.run_id} on {self.version_id}"


class GeneratedAnswer(models.Model):
    """One answer of an experiment: a query with one context, the ids of the pages (or
    chunks) the context held in order, the prompt by its hash, the text or the error, and
    what it cost. Exact match and token F1 against the version's reference answer are
    written with it (None when the query has no reference answer or the answer failed)."""

    class Context(models.TextChoices):
        ORACLE = "oracle", "oracle context: the version's relevant pages"
        RETRIEVED = "retrieved", "retrieved context: the run's top k_final"
        CLOSED_BOOK = "closed_book", "no context"

    experiment = models.ForeignKey(OracleExperiment, on_delete=models.CASCADE, related_name="answers")
    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="+")
    context = models.CharField(max_length=12, choices=Context.choices)
    # 0: the experiment's own context (at its k_final), what its report reads; K > 0: a
    # sweep answer, the retrieved context cut to K pages (OracleExperiment.k_sweep).
    sweep_k = models.PositiveIntegerField(default=0)
    context_ids = models.JSONField(default=list)
    context_tokens = models.PositiveIntegerField(default=0)
    prompt_hash = models.CharField(max_length=64, blank=True)
    text = models.TextField(blank=True)
    error = models.TextField(blank=True)
    raw = models.TextField(blank=True)
    requests = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    exact_match = models.FloatField(null=True, blank=True)
    token_f1 = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["experiment", "query", "context", "sweep_k"], name="generated_answer_unique_at_k")]


class AnswerGrade(models.Model):
    """A grade of a generated answer: by a model (an answer judge with its rubric's hash, its
    raw answer kept) or by a person. Model grades never stand in for people's; agreement
    between the two is reported per slice."""

    class Grade(models.TextChoices):
        CORRECT = "correct"
        PARTLY = "partly"
        WRONG = "wrong"

    class Source(models.TextChoices):
        MODEL = "model"
        HUMAN = "human"

    answer = models.ForeignKey(GeneratedAnswer, on_delete=models.CASCADE, related_name="grades")
    source = models.CharField(max_length=5, choices=Source.choices)
    judge = models.ForeignKey(AnswerJudge, null=True, blank=True, on_delete=models.PROTECT, related_name="grades")
    rubric_hash = models.CharField(max_length=64, blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    grade = models.CharField(max_length=7, choices=Grade.choices, blank=True, help_text="empty when the judge's answer could not be read")
    supported = models.BooleanField(null=True, blank=True, help_text="the answer is supported by its context")
    raw = models.TextField(blank=True)
    error = models.TextField(blank=True)
    requests = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["answer", "judge", "rubric_hash"], condition=Q(source="model"), name="answer_grade_once_per_rubric"
            ),
            models.UniqueConstraint(fields=["answer", "user"], condition=Q(source="human"), name="answer_grade_once_per_person"),
        ]


class EndpointDepthRun(JobRunnerFields):
    """A one-off ask of a live endpoint at a depth of the manager's choosing, for the
    depth-and-cost sweep: a nightly reranked run stops at k_final, so it cannot show what a
    larger k would buy. Every query of the version is asked once through the nightly
    machinery (monitoring.nightly.services.fetch_answers, the endpoint's in-flight and rate
    bounds with it) and stored as a run outside the endpoint's series, named
    "<endpoint> depth K <date>"; the sweep page then sweeps that run to K.

    A background job (lib.background_jobs): a worker lost half way wrote nothing, and the
    job asks every query again when it is sent again."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    golden_set = models.ForeignKey(GoldenSet, on_delete=models.CASCADE, related_name="endpoint_depth_runs")
    endpoint = models.ForeignKey("monitoring.Endpoint", on_delete=models.CASCADE, related_name="depth_runs")
    version = models.ForeignKey(Version, on_delete=models.PROTECT, related_name="+")
    depth = models.PositiveIntegerField()
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    queries_total = models.PositiveIntegerField(default=0)
    queries_done = models.PositiveIntegerField(default=0)
    failed_count = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "enqueued_at"], name="endpoint_depth_run_sweep")]

    def __str__(self) -> str:
        return f"{self.endpoint_id} at depth {self.depth}"
