"""Text (`text:PATH`), the task module `text` (core/tasks/text.ts is its twin): labelled text to
classify, or a corpus to model byte by byte; the spec's task says which.

- Classification: a folder with train.tsv (a header with a `sentence` or `text` column and a
  `label` column) or train.jsonl ({text, label} lines), and optionally test.tsv/test.jsonl (or
  dev.tsv/dev.jsonl) as the test split, else the fixed 20% carve-out. Texts become TEXT_LENGTH
  token ids of a hashing tokenizer (`tokenize`), vocab_size TEXT_VOCAB.
- Language modelling: a text file, or the .txt files of a folder, as rows of bytes (see
  LM_CONTEXT); the last rows are the test split.
"""
import csv
import json
import os
import re
import zlib

import numpy as np

from data_files import _TEST_FRACTION, Raw, _carve_test, _encode_labels, _find, _invalid

TEXT_VOCAB = 1 << 14
TEXT_LENGTH = 128
# A corpus for language modelling is cut into rows of LM_CONTEXT + 1 bytes, each row starting at
# the previous one's last byte, so every byte but the first is a target exactly once; a model
# reads up to LM_CONTEXT bytes (the recipe's context may be shorter) and predicts the next.
LM_CONTEXT = 256
LM_VOCAB = 256
LM_MIN_ROWS = 20

_TOKEN = re.compile(r"[^\W_]+")


def tokenize(text):
    """Hashing tokenizer: stable bucket ids in [1, TEXT_VOCAB), 0 is padding."""
    ids = [zlib.crc32(token.encode()) % (TEXT_VOCAB - 1) + 1 for token in _TOKEN.findall(text.lower())]
    ids = ids[:TEXT_LENGTH]
    return ids + [0] * (TEXT_LENGTH - len(ids))


def _read_text(path):
    """(texts, labels) of a .tsv with a header or a .jsonl file; None when it carries no labels."""
    texts, labels = [], []
    if path.endswith(".tsv"):
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = [h.strip().lower() for h in next(reader, [])]
            text_col = next((header.index(c) for c in ("sentence", "text") if c in header), None)
            if text_col is None:
                raise _invalid(f"{path}: expected a header with a 'sentence' or 'text' column, found {header}")
            if "label" not in header:
                return None
            label_col = header.index("label")
            for line, row in enumerate(reader, start=2):
                if not row:
                    continue
                if len(row) <= max(text_col, label_col):
                    raise _invalid(f"{path}: line {line} has {len(row)} fields, expected {len(header)}")
                texts.append(row[text_col])
                labels.append(row[label_col].strip())
    else:
        with open(path, encoding="utf-8") as f:
            for line, raw in enumerate(f, start=1):
                if not raw.strip():
                    continue
                record = json.loads(raw)
                text = record.get("text", record.get("sentence")) if isinstance(record, dict) else None
                if not isinstance(text, str):
                    raise _invalid(f"{path}: line {line} has no string 'text' field")
                if "label" not in record:
                    return None
                texts.append(text)
                labels.append(str(record["label"]).strip())
    return texts, labels


def _text(spec):
    directory = spec["data_dir"]
    if not os.path.isdir(directory):
        raise _invalid(f"text: data_dir {directory or '(empty)'} is not a directory "
                       "(expected train.tsv or train.jsonl, optional test.tsv/test.jsonl/dev.tsv)")
    train = _read_text(_find(directory, ["train.tsv", "train.jsonl"], "text",
                             "train.tsv (header sentence<TAB>label) or train.jsonl ({text, label} lines)"))
    if train is None or not train[0]:
        raise _invalid(f"text: the training file in {directory} has no labelled rows")
    test = None
    for name in ("test.tsv", "test.jsonl", "dev.tsv", "dev.jsonl"):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            test = _read_text(path)
            if test is not None:
                break
    x_train = np.array([tokenize(t) for t in train[0]], dtype=np.int64).reshape(-1, TEXT_LENGTH)
    if test is None:
        y_all, _, names = _encode_labels(train[1], [], f"text {directory}")
        split_parts = _carve_test(x_train, y_all)
    else:
        y_train, y_test, names = _encode_labels(train[1], test[1], f"text {directory}")
        x_test = np.array([tokenize(t) for t in test[0]], dtype=np.int64).reshape(-1, TEXT_LENGTH)
        split_parts = (x_train, y_train, x_test[y_test >= 0], y_test[y_test >= 0])
    return Raw("text", *split_parts, names, vocab_size=TEXT_VOCAB)


def _corpus(spec):
    """A text file, or the .txt files of a folder in path order, as bytes; the last rows are the test split."""
    path = spec["data_dir"]
    if os.path.isdir(path):
        files = sorted(os.path.join(d, f) for d, _, names in os.walk(path) for f in names if f.endswith(".txt"))
        if not files:
            raise _invalid(f"text: {path} holds no .txt file to model")
    elif os.path.isfile(path):
        files = [path]
    else:
        raise _invalid(f"text: {path or '(empty data_dir)'} is not a file or a directory "
                       "(a language model reads a text file, or a folder of .txt files)")
    parts = []
    for name in files:
        with open(name, "rb") as f:
            parts.append(f.read())
    data = np.frombuffer(b"\n".join(parts), np.uint8)
    rows = (len(data) - 1) // LM_CONTEXT
    if rows < LM_MIN_ROWS:
        raise _invalid(f"text: {path} holds {len(data):,} bytes; a language model needs at least "
                       f"{LM_MIN_ROWS * LM_CONTEXT + 1:,} ({LM_MIN_ROWS} rows of {LM_CONTEXT} bytes)")
    x = data[np.arange(rows)[:, None] * LM_CONTEXT + np.arange(LM_CONTEXT + 1)]
    # The tail, not a random draw: test text never interleaves with the text trained on.
    n_test = int(round(rows * _TEST_FRACTION))
    y = np.zeros(rows, np.int64)
    return Raw("text", x[:-n_test], y[:-n_test], x[-n_test:], y[-n_test:], [], vocab_size=LM_VOCAB,
               task="language_modelling")


LOADERS = {
    "text": lambda spec: _corpus(spec) if spec["task"] == "language_modelling" else _text(spec),
}
