"""POST /api/v1/golden-sets/{slug}/judgments/: existing labels in bulk, as `imported`."""

import json
import re

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from api.parsers import JSONParser, PlainTextParser
from api.permissions import api_golden_set
from api.serializers import validated
from goldenset.services import qrels_import
from lib.errors import GoldsetError
from lib.formats import GRADE_RANGE, QREL_FORMATS
from lib.ids import id_problem

# Labels one request may carry. A request at the cap finishes well inside the deployment's
# 120 s worker timeout (bench/api_import.py), so an accepted import is never cut off after
# its commit and answered 500 (hardening finding 5); more labels go in several requests.
MAX_LABELS_PER_REQUEST = 200_000

# "labels:3" in a problem of the import: line 3 of the TREC lines made from the items.
ITEM_LINE = re.compile(r"^labels:(\d+)")


class JudgmentLabelSerializer(serializers.Serializer):
    query_id = serializers.CharField(max_length=255, trim_whitespace=False)
    doc_id = serializers.CharField(max_length=255, trim_whitespace=False)
    grade = serializers.IntegerField(min_value=GRADE_RANGE[0], max_value=GRADE_RANGE[1])
    start = serializers.IntegerField(required=False, min_value=0, help_text="with end: the label marks this span of the document's text")
    end = serializers.IntegerField(required=False, min_value=0, help_text="the character after the span's last")
    hop = serializers.CharField(required=False, max_length=100, help_text="the evidence group of a multi-hop query")


# The fields of a label beyond the pair and grade: an item with any goes as a JSON line.
EVIDENCE_FIELDS = ("start", "end", "hop")


def _id_problems(labels: list[dict]) -> list[str]:
    """What makes an item's ids unfit (422: the schema cannot say it, e.g. NFC form), named
    like labels[3].doc_id. Checked before the items become TREC lines, which an id with
    whitespace would break into more columns."""
    problems = []
    for index, label in enumerate(labels):
        for name, what in (("query_id", "query id"), ("doc_id", "doc id")):
            problem = id_problem(label[name], what)
            if problem:
                problems.append(f"labels[{index}].{name}: {problem}")
    return problems


def _json_label_count(text: str) -> int:
    """The labels of a `{query_id: {doc_id: grade}}` body, for the cap; 0 when it is not that
    shape (the import then names the fault)."""
    try:
        qrels = json.loads(text)
    except (ValueError, RecursionError):
        return 0
    return sum(len(grades) for grades in qrels.values() if isinstance(grades, dict)) if isinstance(qrels, dict) else 0


class QrelsFormatNegotiation(DefaultContentNegotiation):
    """Here ?format= names the form of the qrels body (trec, beir, csv, json), not one of DRF's
    renderers, which would answer 404 for any but json: answers are always JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class JudgmentImportApi(APIView):
    """Import existing labels as `imported` judgments (write scope, manager), all or
    nothing; publish a version afterwards to snapshot them.

    Two bodies are accepted:

    - `application/json`: `{"labels": [{"query_id", "doc_id", "grade"}, ...], "create_missing": false}`; a label
      may add `start` and `end` (a span of the document's text: the labels of one pair make one
      judgment graded their highest) and `hop`.
      Problems name the item by its index, counting from 0: `labels[2]: query id 'q9' is not in the golden set`.
    - `text/plain`: TREC qrels (`query_id iteration doc_id grade` a line, `#` comments), or with
      `?format=json|beir|csv` any other form the qrels export writes, with `?create_missing=true`
      in the query string. Problems name the line: `qrels:12: ...` (a JSON body: the key path).

    Ids the set does not know are refused, all listed, unless `create_missing`: then id-only
    queries and pages are made. With `chunking`, doc ids are chunk ids of that chunking of the
    set's corpus, each label a span of the chunk's document.
    """

    parser_classes = [JSONParser, PlainTextParser]
    content_negotiation_class = QrelsFormatNegotiation

    @extend_schema_serializer(component_name="JudgmentImportInput")
    class InputSerializer(serializers.Serializer):
        labels = serializers.ListField(
            child=JudgmentLabelSerializer(),
            min_length=1,
            max_length=MAX_LABELS_PER_REQUEST,
            error_messages={"max_length": f"send at most {MAX_LABELS_PER_REQUEST:,} labels a request; split the rest into more requests"},
        )
        create_missing = serializers.BooleanField(required=False, default=False)
        chunking = serializers.CharField(
            required=False, default="", max_length=100, help_text="the doc ids are chunk ids of this chunking: each label a span"
        )

    class TextParamsSerializer(serializers.Serializer):
        create_missing = serializers.BooleanField(
            required=False, default=False, help_text="with a text/plain body: make id-only queries and pages for unknown ids"
        )
        format = serializers.ChoiceField(
            choices=QREL_FORMATS,
            required=False,
            default="trec",
            help_text="with a text/plain body: its form, any that the qrels export writes (trec, json, beir, csv, jsonl)",
        )
        chunking = serializers.CharField(
            required=False, default="", max_length=100, help_text="the doc ids are chunk ids of this chunking: each label a span"
        )

    @extend_schema_serializer(component_name="JudgmentImportOutput")
    class OutputSerializer(serializers.Serializer):
        golden_set = serializers.CharField()
        pages_created = serializers.IntegerField()
        queries_created = serializers.IntegerField()
        judgments_created = serializers.IntegerField()
        grades = serializers.DictField(child=serializers.IntegerField(), help_text="grade -> labels imported with it")
        duplicate_lines = serializers.IntegerField(help_text="identical repeated labels, skipped")
        notes = serializers.ListField(child=serializers.CharField())

    @extend_schema(
        operation_id="judgments_import",
        parameters=[TextParamsSerializer],
        request={"application/json": InputSerializer, "text/plain": OpenApiTypes.STR},
        responses={201: OutputSerializer},
    )
    def post(self, request, slug: str):
        golden_set = api_golden_set(request, slug, write=True)
        if not request.content_type:
            # No body at all: valid by the schema (a body of either type may be sent), and refused as empty.
            raise GoldsetError("the request has no labels: send them as JSON or as qrels text", field="labels")
        if request.content_type.split(";")[0].strip().lower() == "text/plain":
            params = validated(JudgmentImportApi.TextParamsSerializer, request.query_params)
            # DRF hands an empty body over as empty form data, not as "": it is TREC text
            # without a line all the same, refused by the import as such (422).
            text = request.data if isinstance(request.data, str) else ""
            lines, source, create_missing = text.splitlines(keepends=True), "qrels", params["create_missing"]
            fmt, chunking = params["format"], params["chunking"]
            count = sum(1 for line in lines if line.strip() and not line.lstrip().startswith("#"))
            if fmt == "json":
                count = _json_label_count(text)
            elif fmt in ("beir", "csv"):
                count -= 1  # the header line
            if count > MAX_LABELS_PER_REQUEST:
                raise GoldsetError(
                    f"the body holds {count:,} qrels lines; send at most {MAX_LABELS_PER_REQUEST:,} a request "
                    f"and split the rest into more requests"
                )
        else:
            body = validated(JudgmentImportApi.InputSerializer, request.data)
            problems = _id_problems(body["labels"])
            if problems:
                message = problems[0] if len(problems) == 1 else f"{len(problems)} labels have ids that cannot be stored"
                raise GoldsetError(message, problems=problems, field=problems[0].split(":")[0])
            # One line per item, so that the import's "labels:N" is item N - 1: TREC, or JSON
            # lines when an item marks a span or a hop.
            source, create_missing, fmt, chunking = "labels", body["create_missing"], "trec", body["chunking"]
            if any(name in label for label in body["labels"] for name in EVIDENCE_FIELDS):
                lines, fmt = [json.dumps(label, ensure_ascii=False) + "\n" for label in body["labels"]], "jsonl"
            else:
                lines = [f"{label['query_id']} 0 {label['doc_id']} {label['grade']}\n" for label in body["labels"]]
        try:
            summary = qrels_import(
                golden_set_slug=golden_set.slug,
                lines=lines,
                source_name=source,
                create_missing=create_missing,
                user=request.user,
                fmt=fmt,
                chunking=chunking or None,
            )
        except GoldsetError as exc:
            if source == "labels":
                # The import numbers its lines from 1; a JSON body's items are indexed from 0.
                exc.problems = [ITEM_LINE.sub(lambda m: f"labels[{int(m.group(1)) - 1}]", p) for p in exc.problems]
                exc.message = ITEM_LINE.sub(lambda m: f"labels[{int(m.group(1)) - 1}]", exc.message)
            exc.field = exc.field or ("labels" if source == "labels" else None)
            raise
        data = JudgmentImportApi.OutputSerializer(summary.to_dict()).data
        return Response(data, status=status.HTTP_201_CREATED)
