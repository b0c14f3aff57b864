"""The chunkings of a golden set's corpus: list and upload, one chunking's chunks, a document
with its chunks (SEMANTICS.md, "Documents, chunkings and levels").

The chunking `documents` is implicit (each document one chunk, its id the doc_id): it is
not listed and has no chunks to page through.
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from api.pagination import PaginatedMixin
from api.parsers import PlainTextParser
from api.permissions import api_golden_set
from api.serializers import validated
from goldenset.chunkings import chunking_import, chunkings_of
from goldenset.models import Chunk, Chunking, GoldenSet, Page
from lib.errors import GoldsetError, ProblemCollector
from lib.evidence_formats import read_chunk_lines

# Chunks one upload may carry; more go by the import_chunks command (2,000,000 and up).
MAX_CHUNKS_PER_REQUEST = 200_000


@extend_schema_serializer(component_name="Chunking")
class ChunkingOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    chunk_count = serializers.IntegerField()
    document_count = serializers.IntegerField(help_text="documents with at least one chunk")
    created_at = serializers.DateTimeField()


@extend_schema_serializer(component_name="Chunk")
class ChunkOutputSerializer(serializers.Serializer):
    chunk_id = serializers.CharField()
    doc_id = serializers.CharField()
    start = serializers.IntegerField(help_text="first character of the document's text the chunk holds, from 0")
    end = serializers.IntegerField(help_text="the character after its last ([start, end))")


def _chunking(golden_set: GoldenSet, name: str) -> Chunking:
    chunking = Chunking.objects.filter(corpus_id=golden_set.corpus_id, name=name).first()
    if chunking is None:
        raise exceptions.NotFound(f"corpus {golden_set.corpus.slug!r} has no chunking {name!r}")
    return chunking


def _chunk_rows(chunks) -> list[dict]:
    return [{"chunk_id": chunk_id, "doc_id": doc_id, "start": start, "end": end} for chunk_id, doc_id, start, end in chunks]


class ChunkingListApi(APIView):
    """The chunkings of the set's corpus, by name, with their counts."""

    @extend_schema(operation_id="chunkings_list", responses={200: ChunkingOutputSerializer(many=True)})
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        return Response(ChunkingOutputSerializer(chunkings_of(golden_set.corpus), many=True).data)


class ChunkingUploadApi(APIView):
    """Upload a chunking of the set's corpus (write scope, manager): a text/plain body of JSON
    lines `{"chunk_id", "doc_id", "start", "end", "text"?}`, all or nothing; every problem
    names its line and chunk id (`chunks:3: chunk 'd1#2': ...`). `?replace=true` replaces
    the chunks of a chunking of that name."""

    parser_classes = [PlainTextParser]

    class ParamsSerializer(serializers.Serializer):
        name = serializers.RegexField(r"^\S{1,100}$", help_text="the chunking's name, e.g. fixed-400")
        replace = serializers.BooleanField(required=False, default=False, help_text="replace the chunks of a chunking of this name")
        description = serializers.CharField(required=False, default="", max_length=2000)

    @extend_schema_serializer(component_name="ChunkingImportOutput")
    class OutputSerializer(serializers.Serializer):
        corpus = serializers.CharField()
        chunking = serializers.CharField()
        chunks = serializers.IntegerField()
        documents = serializers.IntegerField()
        replaced = serializers.BooleanField()

    @extend_schema(
        operation_id="chunkings_upload",
        parameters=[ParamsSerializer],
        request={"text/plain": OpenApiTypes.STR},
        responses={201: OutputSerializer},
    )
    def post(self, request, slug: str):
        golden_set = api_golden_set(request, slug, write=True)
        params = validated(ChunkingUploadApi.ParamsSerializer, request.query_params)
        text = request.data if isinstance(request.data, str) else ""
        lines = text.splitlines(keepends=True)
        if sum(1 for line in lines if line.strip()) > MAX_CHUNKS_PER_REQUEST:
            raise GoldsetError(f"send at most {MAX_CHUNKS_PER_REQUEST:,} chunks a request; import more with the import_chunks command")
        problems = ProblemCollector()
        summary = chunking_import(
            corpus=golden_set.corpus,
            name=params["name"],
            records=read_chunk_lines(lines, "chunks", problems),
            replace=params["replace"],
            description=params["description"],
            source_name="chunks",
            problems=problems,
        )
        return Response(ChunkingUploadApi.OutputSerializer(summary.to_dict()).data, status=status.HTTP_201_CREATED)


class ChunkingsApi(ChunkingListApi, ChunkingUploadApi):
    """GET lists the corpus's chunkings; POST uploads one."""

    parser_classes = [PlainTextParser]


class ChunkingChunksApi(PaginatedMixin, APIView):
    """The chunks of one chunking in document and text order, paged."""

    @extend_schema(operation_id="chunkings_chunks", responses={200: ChunkOutputSerializer(many=True)})
    def get(self, request, slug: str, name: str):
        golden_set = api_golden_set(request, slug)
        chunking = _chunking(golden_set, name)
        rows = (
            Chunk.objects.filter(chunking=chunking)
            .order_by("page_id", "start", "id")
            .values_list("chunk_id", "page__doc_id", "start", "end")
        )
        return self.paginated(rows, lambda page: ChunkOutputSerializer(_chunk_rows(page), many=True).data)


class DocumentApi(APIView):
    """One document of the set's corpus with its chunks (of every chunking, or of
    `?chunking=NAME`), in text order. The document is named by `?doc_id=`, since ids hold
    slashes and '#'."""

    class FilterSerializer(serializers.Serializer):
        doc_id = serializers.CharField(max_length=255, trim_whitespace=False)
        chunking = serializers.CharField(required=False, max_length=100)

    @extend_schema_serializer(component_name="Document")
    class OutputSerializer(serializers.Serializer):
        doc_id = serializers.CharField()
        title = serializers.CharField()
        text = serializers.CharField(help_text="the text chunk and span offsets index")
        url = serializers.CharField()
        metadata = serializers.DictField()
        content_hash = serializers.CharField()
        duplicate_of = serializers.CharField(allow_null=True, help_text="the first document of its duplicate group, if another")
        chunks = serializers.DictField(child=ChunkOutputSerializer(many=True), help_text="chunking name -> its chunks of the document")

    @extend_schema(operation_id="documents_get", parameters=[FilterSerializer], responses={200: OutputSerializer})
    def get(self, request, slug: str):
        golden_set = api_golden_set(request, slug)
        params = validated(DocumentApi.FilterSerializer, request.query_params)
        page = Page.objects.filter(corpus_id=golden_set.corpus_id, doc_id=params["doc_id"]).select_related("duplicate_of").first()
        if page is None:
            raise exceptions.NotFound(f"no document {params['doc_id'][:100]!r} in corpus {golden_set.corpus.slug!r}")
        chunks = Chunk.objects.filter(page=page).order_by("chunking__name", "start", "id")
        if "chunking" in params:
            chunks = chunks.filter(chunking=_chunking(golden_set, params["chunking"]))
        by_chunking: dict[str, list] = {}
        for name, chunk_id, start, end in chunks.values_list("chunking__name", "chunk_id", "start", "end"):
            by_chunking.setdefault(name, []).append((chunk_id, page.doc_id, start, end))
        data = {
            "doc_id": page.doc_id,
            "title": page.title,
            "text": page.text,
            "url": page.url,
            "metadata": page.metadata,
            "content_hash": page.content_hash,
            "duplicate_of": page.duplicate_of.doc_id if page.duplicate_of else None,
            "chunks": {name: _chunk_rows(rows) for name, rows in by_chunking.items()},
        }
        return Response(DocumentApi.OutputSerializer(data).data)
