"""Output serializers that several API classes share. Input serializers, and outputs used
by one class only, live inside that class (api/views/)."""

from django.http import QueryDict
from rest_framework import serializers

from evaluation.models import Run


def validated(serializer_class: type[serializers.Serializer], data) -> dict:
    """`data` (a body or query parameters) checked by `serializer_class`; a ValidationError
    (400, every problem named by its field) otherwise."""
    serializer = serializer_class(data=data)
    valid = serializer.is_valid()
    errors = dict(serializer.errors) if not valid else {}
    if isinstance(data, QueryDict):
        # DRF takes an empty query parameter for an absent one; the schema says a value
        # may not be empty (minLength 1), so `?system=` is refused, not ignored.
        for name, field in serializer.fields.items():
            if "" in data.getlist(name) and not getattr(field, "allow_blank", False) and name not in errors:
                errors[name] = ["may not be empty; leave the parameter out instead"]
    if errors:
        raise serializers.ValidationError(errors)
    return serializer.validated_data


class GradeSerializer(serializers.Serializer):
    value = serializers.IntegerField()
    label = serializers.CharField()


class GoldenSetOutputSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    description = serializers.CharField()
    corpus = serializers.CharField(source="corpus.slug")
    grade_scale = GradeSerializer(many=True)
    relevance_threshold = serializers.IntegerField(help_text="binary metrics count a page relevant from this grade")
    k_first = serializers.IntegerField(help_text="cut-off of the first stage (recall@k_first)")
    k_final = serializers.IntegerField(help_text="pages that reach the prompt (recall@k_final)")
    query_slice_fields = serializers.ListField(child=serializers.CharField())
    page_slice_fields = serializers.ListField(child=serializers.CharField())
    query_count = serializers.IntegerField(source="active_queries", help_text="queries not retired")
    latest_version = serializers.IntegerField(source="latest_version_number", allow_null=True)


class VersionOutputSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    content_hash = serializers.CharField(help_text="sha256 of every label and snapshotted slice value; the qrels' ETag")
    note = serializers.CharField()
    author = serializers.CharField(source="author.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    relevance_threshold = serializers.IntegerField()
    k_first = serializers.IntegerField()
    k_final = serializers.IntegerField()
    query_slice_fields = serializers.ListField(child=serializers.CharField())
    page_slice_fields = serializers.ListField(child=serializers.CharField())
    query_count = serializers.IntegerField()
    label_count = serializers.IntegerField()
    relevant_count = serializers.IntegerField(help_text="labels with a grade at or above relevance_threshold")
    queries_without_relevant = serializers.IntegerField(help_text="left out of averages and shown as a coverage gap")


class RunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    system = serializers.CharField()
    stage = serializers.ChoiceField(choices=Run.Stage.choices)
    source_name = serializers.CharField(help_text="the uploaded file's name")
    uploaded_by = serializers.CharField(source="uploaded_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    query_count = serializers.IntegerField()
    entry_count = serializers.IntegerField()
    depth_cap = serializers.IntegerField(help_text="entries kept per query")
    dropped_by_depth = serializers.IntegerField(help_text="entries past the depth cap, not kept")
    external_doc_count = serializers.IntegerField(help_text="distinct doc ids outside the corpus: they count as unjudged")
    extra_column_lines = serializers.IntegerField(help_text="lines with text after the tag column, ignored")


class RunFilterSerializer(serializers.Serializer):
    """?system=&stage= on lists of runs and of evaluations."""

    # Taken as sent (no trimming): a system is matched exactly, and "\x0b" is not "".
    system = serializers.CharField(required=False, max_length=200, trim_whitespace=False, help_text="only runs of this system")
    stage = serializers.ChoiceField(choices=Run.Stage.choices, required=False, help_text="only runs of this stage")


class SliceScoresSerializer(serializers.Serializer):
    slice = serializers.CharField(help_text='"query:FIELD=VALUE" or "page:FIELD=VALUE"')
    queries_averaged = serializers.IntegerField()
    no_relevant_count = serializers.IntegerField()
    scores = serializers.DictField(child=serializers.FloatField(), help_text="metric name -> fraction in [0, 1]")


class CompletenessSerializer(serializers.Serializer):
    slice = serializers.CharField(help_text='"" for all queries, else "query:FIELD=VALUE"')
    queries = serializers.IntegerField(help_text="queries averaged: those with a relevant page")
    judged_at_k_final = serializers.FloatField(help_text="fraction of the top k_final with a label")
    judged_at_k_first = serializers.FloatField(help_text="fraction of the top k_first with a label")
    loro_depth = serializers.IntegerField(allow_null=True, help_text="pool depth assumed for leave-one-run-out")
    loro_other_runs = serializers.IntegerField(allow_null=True, help_text="runs of other systems in the pool")
    loro_recall_k_first = serializers.FloatField(allow_null=True, help_text="recall@k_first without the unique pages")
    loro_ndcg_10 = serializers.FloatField(allow_null=True, help_text="ndcg@10 without the unique pages")
    loro_recall_change_points = serializers.FloatField(allow_null=True, help_text="reduced minus full recall@k_first, points")
    loro_ndcg_change_points = serializers.FloatField(allow_null=True, help_text="reduced minus full ndcg@10, points")
    unique_relevant_count = serializers.IntegerField(allow_null=True, help_text="relevant labels only this system pooled")
    loro_emptied_queries = serializers.IntegerField(allow_null=True)


class EvaluationRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    system = serializers.CharField()
    stage = serializers.ChoiceField(choices=Run.Stage.choices)


class EvaluationOutputSerializer(serializers.Serializer):
    """One run scored against one version (api.views.evaluations.evaluation_data)."""

    run = EvaluationRunSerializer()
    version = serializers.IntegerField(help_text="the version number the figures belong to")
    content_hash = serializers.CharField(help_text="of that version")
    status = serializers.ChoiceField(choices=["pending", "running", "done", "failed"])
    error = serializers.CharField(allow_blank=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    metrics = serializers.ListField(child=serializers.CharField(), help_text="ranx metric names, in display order")
    queries_in_version = serializers.IntegerField()
    queries_averaged = serializers.IntegerField(help_text="queries the averages are over")
    unanswered_count = serializers.IntegerField(help_text="queries the run did not answer, scored 0 (trec_eval -c)")
    no_relevant_count = serializers.IntegerField(help_text="queries with no relevant page, left out of the averages")
    scores = serializers.DictField(child=serializers.FloatField(), help_text="all queries: metric name -> fraction in [0, 1]")
    slices = SliceScoresSerializer(many=True)
    completeness = CompletenessSerializer(many=True)
    judged_floor = serializers.FloatField(help_text="the set's floor for Judged@k_final (fraction)")
    unreliable = serializers.BooleanField(help_text="Judged@k_final of all queries is under judged_floor")
