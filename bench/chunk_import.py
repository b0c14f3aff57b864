"""A chunking of 2,000,000 chunks imported by `import_chunks`, against a plain COPY of the same rows.

    .venv/bin/python bench/chunk_import.py [--documents 100000 --chunks-per-document 20]
        [--database-url postgres://postgres@127.0.0.1:5432/goldset_bench_chunks]

Creates the database named by --database-url (it must not exist beforehand), migrates it,
and loads by COPY a corpus of --documents pages whose text is --chunks-per-document runs of
50 characters (the fixture, not what is measured). Writes a JSON lines file of the chunks
(`{"chunk_id", "doc_id", "start", "end"}`, ids like kb/000123#2#7), then times:

- the import: `import_chunks FILE --corpus bench --chunking fixed-50` in this process, from
  reading the file to the commit (every chunk checked against its document, COPY);
- the floor: psycopg's COPY of the same (chunking, chunk_id, page, start, end) rows into
  goldenset_chunk under a second chunking, from tuples already in memory.

It prints both, their ratio and the peak resident memory of the process after the import
(ru_maxrss), and checks that the import wrote every chunk. The database is dropped at the end.
"""

import argparse
import json
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.data import doc_id_of  # noqa: E402  (needs the repository on sys.path)
from bench.scratch import database_url_argument, django_setup, scratch_database, server_version  # noqa: E402

PIECE = 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--chunks-per-document", type=int, default=20)
    database_url_argument(parser, "goldset_bench_chunks")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = parser.parse_args()
    django_setup(args.database_url)
    from django.core.management import call_command

    with scratch_database(args.database_url, keep=args.keep), tempfile.TemporaryDirectory() as folder:
        call_command("migrate", verbosity=0)
        from goldenset.models import Chunk, Chunking, Corpus, default_team

        corpus = Corpus.objects.create(slug="bench", name="bench", team=default_team())
        text = "".join(f"{n:0{PIECE - 1}d}." for n in range(args.chunks_per_document))
        now = datetime.now(UTC)
        with psycopg.connect(args.database_url) as conn, conn.cursor() as cursor:
            with cursor.copy(
                "COPY goldenset_page (corpus_id, doc_id, title, text, url, has_text, metadata, content_hash, created_at) FROM STDIN"
            ) as copy:
                for n in range(args.documents):
                    copy.write_row((corpus.id, doc_id_of(n), "", text, "", True, "{}", f"{n:064d}", now))
            cursor.execute("ANALYZE goldenset_page")
        path = Path(folder) / "chunks.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for n in range(args.documents):
                doc_id = doc_id_of(n)
                for c in range(args.chunks_per_document):
                    out.write(
                        json.dumps({"chunk_id": f"{doc_id}#{c}", "doc_id": doc_id, "start": c * PIECE, "end": (c + 1) * PIECE}) + "\n"
                    )
        total = args.documents * args.chunks_per_document

        started = time.perf_counter()
        call_command("import_chunks", str(path), "--corpus", "bench", "--chunking", "fixed-50", verbosity=0)
        imported = time.perf_counter() - started
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        chunking = Chunking.objects.get(name="fixed-50")
        assert chunking.chunk_count == total == Chunk.objects.filter(chunking=chunking).count()

        floor_chunking = Chunking.objects.create(corpus=corpus, name="floor")
        with psycopg.connect(args.database_url) as conn, conn.cursor() as cursor:
            cursor.execute("SELECT doc_id, id FROM goldenset_page WHERE corpus_id = %s", (corpus.id,))
            pages = dict(cursor.fetchall())
            rows = [
                (floor_chunking.id, f"{doc_id_of(n)}#{c}", pages[doc_id_of(n)], c * PIECE, (c + 1) * PIECE)
                for n in range(args.documents)
                for c in range(args.chunks_per_document)
            ]
            started = time.perf_counter()
            with cursor.copy('COPY goldenset_chunk (chunking_id, chunk_id, page_id, start, "end") FROM STDIN') as copy:
                for row in rows:
                    copy.write_row(row)
            conn.commit()
            floor = time.perf_counter() - started

        print(f"PostgreSQL {server_version()}; {args.documents:,} documents, {total:,} chunks")
        print(f"import_chunks (read, check, COPY, commit): {imported:.1f} s")
        print(f"plain COPY of the same rows from memory:    {floor:.1f} s  (import / COPY: {imported / floor:.1f}x)")
        print(f"peak resident memory after the import: {peak_mib:,.0f} MiB")


if __name__ == "__main__":
    main()
