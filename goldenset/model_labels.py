"""Model labels: the one write path (`model_labels_import`) and the reads of floor 2.

Kept out of goldenset/services.py because model labels are a source of their own: they are
written to ModelJudgment, a table that human resolution, versions, exports, scores and
agreement never read. The import validates every record first and names each bad line,
then writes all of them in one transaction (COPY on PostgreSQL, lib.bulk), or nothing.
"""

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from goldenset.models import GoldenSet, ModelJudgment, ModelPrompt, Page, Query
from lib.bulk import bulk_insert, gc_paused
from lib.errors import ConflictError, GoldsetError, ProblemCollector
from lib.formats import ModelLabelLine
from lib.progress import Progress, no_progress

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
MAX_MODEL_NAME = ModelJudgment._meta.get_field("model").max_length


def prompt_hash_of(text: str) -> str:
    """sha256 hex of the exact prompt text (UTF-8, nothing stripped or normalised): a
    changed space is a changed prompt."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class ModelLabelImportSummary:
    """What an import wrote, for the command's closing lines."""

    golden_set: str
    model: str
    prompt_hash: str
    labels_created: int = 0
    prompt_created: bool = False
    grades: Counter = field(default_factory=Counter)

    def lines(self) -> list[str]:
        grades = ", ".join(f"{grade}: {count}" for grade, count in sorted(self.grades.items()))
        return [
            f"golden set {self.golden_set}, model {self.model}, prompt {self.prompt_hash[:12]}"
            + (" (new prompt text stored)" if self.prompt_created else ""),
            f"model labels imported: {self.labels_created}",
            f"grades: {grades or 'none'}",
            "model labels are kept apart: no version, export or score reads them",
        ]


def _checked_prompt(prompt_text: str | None, prompt_hash: str | None) -> str:
    if (prompt_text is None) == (prompt_hash is None):
        raise GoldsetError("give the prompt's text or its hash, exactly one of them", field="prompt")
    if prompt_text is not None:
        if not prompt_text.strip():
            raise GoldsetError("the prompt text is empty", field="prompt")
        return prompt_hash_of(prompt_text)
    if not _SHA256_HEX.fullmatch(prompt_hash):
        raise GoldsetError(f"prompt hash {prompt_hash!r} is not a sha256 hex digest (64 characters 0-9a-f)", field="prompt_hash")
    return prompt_hash


def model_labels_import(
    *,
    golden_set: GoldenSet,
    model: str,
    records: Iterable[ModelLabelLine],
    prompt_text: str | None = None,
    prompt_hash: str | None = None,
    source_name: str = "records",
    progress: Progress = no_progress,
    problems: ProblemCollector | None = None,
) -> ModelLabelImportSummary:
    """Store `records` as the labels of `model` under one prompt (its text, stored once and
    hashed, or its hash alone) in `golden_set`. All or nothing.

    Refused, every fault named by line: an unknown query or doc id, a grade not on the set's
    scale, a pair given twice, a pair this model and prompt already labelled. `problems` may
    hold what reading the file found already (lib.formats' readers): they are refused together
    with these, so one attempt names every bad line. Returns a summary.
    """
    model = model.strip() if isinstance(model, str) else ""
    if not model or len(model) > MAX_MODEL_NAME or not model.isprintable():
        raise GoldsetError(f"the model's name must be 1 to {MAX_MODEL_NAME} printable characters", field="model")
    digest = _checked_prompt(prompt_text, prompt_hash)
    scale = set(golden_set.grade_values())
    problems = problems if problems is not None else ProblemCollector()
    with gc_paused():
        query_pks = dict(Query.objects.filter(golden_set=golden_set).values_list("query_id", "id"))
        page_pks = dict(Page.objects.filter(corpus_id=golden_set.corpus_id).values_list("doc_id", "id"))
        taken = set(ModelJudgment.objects.filter(golden_set=golden_set, model=model, prompt_hash=digest).values_list("query_id", "page_id"))
        rows: dict[tuple[int, int], ModelLabelLine] = {}
        for record in progress(records, f"checking {source_name}"):
            where = f"{source_name}:{record.line}"
            query_pk, page_pk = query_pks.get(record.query_id), page_pks.get(record.doc_id)
            if query_pk is None:
                problems.add(f"{where}: query id {record.query_id!r} is not in golden set {golden_set.slug!r}")
            if page_pk is None:
                problems.add(f"{where}: doc id {record.doc_id!r} is not in the corpus")
            if record.grade not in scale:
                problems.add(f"{where}: grade {record.grade} is not on the set's scale {sorted(scale)}")
            if query_pk is None or page_pk is None:
                continue
            pair = (query_pk, page_pk)
            if pair in rows:
                problems.add(f"{where}: pair {record.query_id} {record.doc_id} is given again (first on line {rows[pair].line})")
            elif pair in taken:
                problems.add(f"{where}: pair {record.query_id} {record.doc_id} already has a label from {model} with this prompt")
            else:
                rows[pair] = record
        problems.raise_if_any(f"cannot import model labels from {source_name}: {len(problems.problems)} problem(s); nothing was stored")
        if not rows:
            raise GoldsetError(f"{source_name} holds no model labels")

        summary = ModelLabelImportSummary(golden_set=golden_set.slug, model=model, prompt_hash=digest)
        summary.grades = Counter(record.grade for record in rows.values())
        low, high = min(scale), max(scale)
        now = timezone.now()
        try:
            with transaction.atomic():
                if prompt_text is not None:
                    _, summary.prompt_created = ModelPrompt.objects.get_or_create(prompt_hash=digest, defaults={"text": prompt_text})
                table_rows = (
                    (golden_set.pk, query_pk, page_pk, model, digest, record.raw, record.score, record.grade, low, high, now)
                    for (query_pk, page_pk), record in progress(rows.items(), "writing model labels")
                )
                summary.labels_created = bulk_insert(
                    ModelJudgment._meta.db_table,
                    [
                        "golden_set_id",
                        "query_id",
                        "page_id",
                        "model",
                        "prompt_hash",
                        "raw_answer",
                        "score",
                        "grade",
                        "scale_low",
                        "scale_high",
                        "created_at",
                    ],
                    table_rows,
                )
        except IntegrityError as exc:
            # Another import of this model and prompt wrote some of these pairs after they were
            # checked: model_judgment_unique_per_prompt refused the write, all of it.
            raise ConflictError(
                f"another import of {model}'s labels with this prompt wrote some of these pairs meanwhile; nothing was stored"
            ) from exc
    return summary


@dataclass(frozen=True)
class ModelSource:
    """One model and prompt that labelled pairs of a set."""

    model: str
    prompt_hash: str
    label_count: int

    @property
    def short_hash(self) -> str:
        return self.prompt_hash[:12]


def model_sources(golden_set: GoldenSet) -> list[ModelSource]:
    """The (model, prompt) sources of the set's model labels, most labels first. One query."""
    rows = (
        ModelJudgment.objects.filter(golden_set=golden_set)
        .values("model", "prompt_hash")
        .annotate(n=Count("id"))
        .order_by("-n", "model", "prompt_hash")
    )
    return [ModelSource(row["model"], row["prompt_hash"], row["n"]) for row in rows]


def model_prompt_store(*, text: str) -> str:
    """Keep `text` as a prompt (once: its hash names it) and return the hash. An edited
    prompt is another text, so another hash: labels of two wordings never mix."""
    digest = _checked_prompt(text, None)
    ModelPrompt.objects.get_or_create(prompt_hash=digest, defaults={"text": text})
    return digest


@dataclass(frozen=True)
class ModelLabel:
    """One grade a judge read, by primary keys (the judge has the rows already)."""

    query_pk: int
    page_pk: int
    grade: int
    raw: str
    score: float | None = None


def model_labels_record(*, golden_set: GoldenSet, model: str, prompt_hash: str, labels: Iterable[ModelLabel]) -> int:
    """Store grades a judge job read (labeling.model_labels.jobs), in one transaction; the
    number stored. The prompt must be stored already (model_prompt_store). A pair this
    model and prompt labelled already is left as it is, not refused: a job run again after
    a crash, or two jobs racing, skip what the other wrote (model_judgment_unique_per_prompt)."""
    if not ModelPrompt.objects.filter(prompt_hash=prompt_hash).exists():
        raise GoldsetError(f"no prompt {prompt_hash[:12]} is stored", field="prompt")
    low, high = min(golden_set.grade_values()), max(golden_set.grade_values())
    rows = [
        ModelJudgment(
            golden_set=golden_set,
            query_id=label.query_pk,
            page_id=label.page_pk,
            model=model,
            prompt_hash=prompt_hash,
            raw_answer=label.raw.replace("\x00", ""),
            score=label.score,
            grade=label.grade,
            scale_low=low,
            scale_high=high,
        )
        for label in labels
    ]
    for row in rows:
        if not low <= row.grade <= high:
            raise GoldsetError(f"grade {row.grade} is not on the set's scale {low}-{high}", field="grade")
    with transaction.atomic():
        before = ModelJudgment.objects.filter(golden_set=golden_set, model=model, prompt_hash=prompt_hash).count()
        ModelJudgment.objects.bulk_create(rows, ignore_conflicts=True)
        after = ModelJudgment.objects.filter(golden_set=golden_set, model=model, prompt_hash=prompt_hash).count()
    return after - before
