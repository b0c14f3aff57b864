"""Decompression bombs of each compressed run form, made a chunk at a time (the test never
holds what they expand to), for tests/hardening/test_upload_bombs.py and bench/upload_bombs.py."""

import gzip
import io

import numpy as np

_CHUNK = 16 << 20


def lz4_bomb(expanded_bytes: int) -> bytes:
    """A ranx-shaped LZ4 run (a frame inside a frame) of `expanded_bytes` zero bytes: LZ4
    shrinks zeros about 250 times, so twice makes 2 GB a file of about 40 KB."""
    import lz4.frame

    return lz4.frame.compress(_lz4_frame(expanded_bytes))


def _lz4_frame(expanded_bytes: int) -> bytes:
    import lz4.frame

    compressor = lz4.frame.LZ4FrameCompressor()
    parts = [compressor.begin()]
    zeros = bytes(_CHUNK)
    for start in range(0, expanded_bytes, _CHUNK):
        parts.append(compressor.compress(zeros[: min(_CHUNK, expanded_bytes - start)]))
    parts.append(compressor.flush())
    return b"".join(parts)


def gzip_bomb(expanded_bytes: int) -> bytes:
    """gzip of `expanded_bytes` of one TREC line repeated (about 1/1000 of that compressed)."""
    line = b"q1 Q0 d1 1 1.0 bomb\n"
    block = line * (_CHUNK // len(line))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as writer:
        written = 0
        while written < expanded_bytes:
            piece = block[: expanded_bytes - written]
            writer.write(piece)
            written += len(piece)
    return out.getvalue()


def parquet_bomb(rows: int) -> bytes:
    """A parquet run of `rows` rows of one query, doc and score: dictionary pages and run
    lengths make it a few KB, while a reader allocates every row its footer announces."""
    import pyarrow
    import pyarrow.parquet

    chunk = 1_000_000
    schema = pyarrow.schema(
        [
            ("q_id", pyarrow.dictionary(pyarrow.int8(), pyarrow.string())),
            ("doc_id", pyarrow.dictionary(pyarrow.int8(), pyarrow.string())),
            ("score", pyarrow.float64()),
        ]
    )
    out = pyarrow.BufferOutputStream()
    with pyarrow.parquet.ParquetWriter(out, schema, compression="gzip") as writer:
        for start in range(0, rows, chunk):
            size = min(chunk, rows - start)
            codes = pyarrow.array(np.zeros(size, dtype=np.int8))
            writer.write_table(
                pyarrow.table(
                    {
                        "q_id": pyarrow.DictionaryArray.from_arrays(codes, pyarrow.array(["q1"])),
                        "doc_id": pyarrow.DictionaryArray.from_arrays(codes, pyarrow.array(["d1"])),
                        "score": pyarrow.array(np.zeros(size)),
                    },
                    schema=schema,
                ),
                row_group_size=chunk,
            )
    return out.getvalue().to_pybytes()
