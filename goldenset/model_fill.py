"""Version variants "with model labels": the opt-in use of model labels in a version.

A published version is human labels only, and stays so: its labels, its content hash and
its default export never change. A manager may add to it a variant whose qrels are the
version's human labels with one model's labels (a model and a prompt hash) filling the
pairs of the version's queries that no person labelled. The variant is written once
(`version_model_fill_create`, one transaction), is append-only like the version, and has
a content hash of its own (`model_fill_hash`) that covers the version's hash, the model,
the prompt hash and every model-filled label, so that a number computed on it can never be
mistaken for one on the human version. It is exported on its own URL, API path and command
option (`model_fill_rows`), never by the version's default export, and every place that
shows it says it is model-filled and what share of its labels are the model's.
"""

import heapq
from collections.abc import Iterator

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from goldenset.models import ModelJudgment, Version, VersionLabel, VersionModelFill, VersionModelLabel, VersionQuery
from goldenset.selectors import version_check_intact, version_label_rows
from lib.bulk import bulk_insert
from lib.errors import ConflictError, GoldsetError
from lib.hashing import StreamHash, canonical_json
from lib.ids import natural_key

VARIANT = "with model labels"


def model_fill_hash(version_hash: str, model: str, prompt_hash: str, labels: Iterator[tuple[str, str, int]]) -> str:
    """The content hash of a variant: what it is (the version's hash, the model, the prompt
    hash), then each model-filled label (query_id, doc_id, grade) in natural order. Not a
    version's hash: its first line names the variant, so the two can never coincide."""
    digest = StreamHash()
    digest.add(canonical_json({"variant": VARIANT, "version": version_hash, "model": model, "prompt_hash": prompt_hash}))
    digest.add_lines(f"M\t{query_id}\t{doc_id}\t{grade}" for query_id, doc_id, grade in labels)
    return digest.hexdigest()


def version_model_fill_create(
    *,
    version: Version,
    model: str,
    prompt_hash: str,
    user: AbstractBaseUser | None = None,
) -> VersionModelFill:
    """Write the variant of `version` filled by `model`'s labels under `prompt_hash`.

    Refuses (GoldsetError, naming the field) a model and prompt with no label in the set,
    (ConflictError) a variant of that version, model and prompt made already, and a version
    that no longer matches its hash. The model labels used are those of the version's
    queries on pairs the version does not label, as they stand now; labels the model writes
    later go into a variant of a later version. All or nothing.
    """
    golden_set = version.golden_set
    model = (model or "").strip()
    labels = ModelJudgment.objects.filter(golden_set=golden_set, model=model, prompt_hash=prompt_hash or "")
    if not model or not labels.exists():
        raise GoldsetError(
            f"golden set {golden_set.slug!r} has no model labels from {model or '(no model)'!r} with prompt {(prompt_hash or '')[:12] or '(none)'}",
            field="model",
        )
    existing = VersionModelFill.objects.filter(version=version, model=model, prompt_hash=prompt_hash).first()
    if existing is not None:
        raise _made_already(existing)
    version_check_intact(version)
    with transaction.atomic():
        human = set(VersionLabel.objects.filter(version=version).values_list("query_id", "page_id").iterator(chunk_size=20_000))
        queries = VersionQuery.objects.filter(version=version).values("query_id")
        rows = [
            row
            for row in labels.filter(query_id__in=queries)
            .values_list(
                "query_id",
                "page_id",
                "query__query_id",
                "page__doc_id",
                "grade",
            )
            .iterator(chunk_size=20_000)
            if (row[0], row[1]) not in human
        ]
        rows.sort(key=lambda row: (natural_key(row[2]), natural_key(row[3])))
        content_hash = model_fill_hash(version.content_hash, model, prompt_hash, ((q, d, g) for _, _, q, d, g in rows))
        try:
            with transaction.atomic():
                fill = VersionModelFill.objects.create(
                    version=version,
                    model=model,
                    prompt_hash=prompt_hash,
                    content_hash=content_hash,
                    human_label_count=version.label_count,
                    model_label_count=len(rows),
                    model_relevant_count=sum(1 for *_, grade in rows if grade >= version.relevance_threshold),
                    created_by=user,
                )
        except IntegrityError as exc:  # version_model_fill_unique_source: another request made it meanwhile
            raise _made_already(VersionModelFill.objects.get(version=version, model=model, prompt_hash=prompt_hash)) from exc
        bulk_insert(
            VersionModelLabel._meta.db_table,
            ["fill_id", "query_id", "page_id", "grade", "position"],
            ((fill.pk, q, p, g, position) for position, (q, p, _, _, g) in enumerate(rows)),
        )
    return fill


def _made_already(fill: VersionModelFill) -> ConflictError:
    return ConflictError(
        f"version {fill.version.number} already has a variant with the labels of {fill.model} (prompt {fill.prompt_hash[:12]}): "
        f"{fill.short_hash}; model labels written since go into a variant of the next version"
    )


def model_fills_of(version: Version) -> QuerySet[VersionModelFill]:
    """The version's variants with model labels, oldest first."""
    return VersionModelFill.objects.filter(version=version).select_related("created_by").order_by("id")


def model_fill_get(version: Version, fill_id: int) -> VersionModelFill:
    """The version's variant `fill_id`; GoldsetError (field fill) when it has none such."""
    fill = VersionModelFill.objects.filter(version=version, pk=fill_id).select_related("version__golden_set").first()
    if fill is None:
        raise GoldsetError(f"version {version.number} of {version.golden_set.slug!r} has no variant {fill_id}", field="fill")
    return fill


def model_fill_rows(fill: VersionModelFill) -> Iterator[tuple[str, str, int]]:
    """(query_id, doc_id, grade) of the variant, human and model labels merged in natural
    order, streamed. Checks first that the version still matches its hash; the model rows
    are append-only like the version's."""
    human = version_label_rows(fill.version)
    filled = (
        VersionModelLabel.objects.filter(fill=fill)
        .order_by("position")
        .values_list("query__query_id", "page__doc_id", "grade")
        .iterator(chunk_size=20_000)
    )
    return heapq.merge(human, filled, key=lambda row: (natural_key(row[0]), natural_key(row[1])))
