"""Predictions of a finished run's best model on new inputs, fed as the run fed its data
(export_model.build: its standardisation, its seeds' ensemble or one seed, flip averaging):

    python3 predict_model.py RUN_DIR INPUT [--seed N] [--out FILE.csv]

INPUT holds raw examples in the units of the run's dataset files (an image's pixels 0-255): an
.npz (its array "x", else its first), a CSV of numbers (a header line is skipped; one example a
row, flattened), an IDX file as MNIST ships them (optionally gzipped), or a folder of images
(PNG, JPEG, ...; a model of images only: each read as grayscale or RGB by the model's channels,
resized to its height and width where it differs, said on stderr). Each example has the model's
input shape or its flattened size (a language model's: a window of bytes, 0-255). Writes CSV:
index (a folder's: the file's name), prediction and, for classes, the probability of the
predicted one (a language model's: the byte most likely to follow the window, and its
probability); a problem with the input is one line on stderr, exit 1.
Run by `research-agent predict RUN INPUT`.
"""

import argparse
import csv
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "gpu-runner", "python")]
from export_model import build  # noqa: E402
from tasks.images import read_idx  # noqa: E402  (the runner's own reader of MNIST's files)

BATCH = 512
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")


def refuse(message):
    print(f"predict: {message}", file=sys.stderr)
    sys.exit(1)


def read_images(folder, shape):
    """The folder's images by name (its subfolders not read), as the model takes them."""
    from PIL import Image, UnidentifiedImageError

    if len(shape) != 3 or shape[0] not in (1, 3):
        refuse(f"{folder}: a folder of images is for a model of images; this one takes examples of shape {shape}")
    names = sorted(n for n in os.listdir(folder) if n.lower().endswith(IMAGE_SUFFIXES))
    if not names:
        refuse(f"{folder}: no image files ({', '.join(IMAGE_SUFFIXES)})")
    channels, height, width = shape
    images, resized = [], 0
    for name in names:
        try:
            with Image.open(os.path.join(folder, name)) as image:
                image = image.convert("L" if channels == 1 else "RGB")
                if image.size != (width, height):
                    image = image.resize((width, height), Image.BILINEAR)
                    resized += 1
                pixels = np.asarray(image, dtype=np.float32)
        except (UnidentifiedImageError, OSError) as exc:
            refuse(f"{os.path.join(folder, name)}: not an image ({exc})")
        images.append(pixels[None] if channels == 1 else pixels.transpose(2, 0, 1))
    if resized:
        print(f"predict: {resized} of {len(names)} images resized to {width}x{height}, the model's input", file=sys.stderr)
    return np.stack(images), names


def read_input(path):
    if not os.path.isfile(path):
        refuse(f"no file {path}")
    if path.endswith(".npz"):
        with np.load(path) as arrays:
            return arrays["x"] if "x" in arrays.files else arrays[arrays.files[0]]
    if path.endswith(".csv"):
        with open(path, newline="") as f:
            rows = [r for r in csv.reader(f) if r]
        try:
            float(rows[0][0])
        except (ValueError, IndexError):
            rows = rows[1:]  # a header
        try:
            return np.array([[float(v) for v in r] for r in rows], dtype=np.float32)
        except ValueError as exc:
            refuse(f"{path}: not all numbers ({exc})")
    if "idx" in os.path.basename(path) or "ubyte" in os.path.basename(path):
        try:
            return read_idx(path)
        except Exception as exc:  # the runner's loader says what is wrong with the file
            refuse(str(exc))
    refuse(f"{path}: give an .npz, a .csv, an IDX file or a folder of images")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("input")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    model, spec, _, _ = build(args.run_dir, args.seed)
    shape = spec["input"]["shape"]
    x, names = read_images(args.input, shape) if os.path.isdir(args.input) else (read_input(args.input), None)
    if x.ndim >= 1 and list(x.shape[1:]) != shape:
        if x.ndim != 2 or x.shape[1] != math.prod(shape):
            refuse(f"{args.input}: examples of shape {list(x.shape[1:])}, the model takes {shape} (or {math.prod(shape)} values flattened)")
        x = x.reshape(len(x), *shape)
    tokens = spec["input"]["standardise"] is None
    inputs = torch.from_numpy(np.ascontiguousarray(x)).to(torch.long if tokens else torch.float32)
    classes = spec["output"].get("classes")
    next_byte = spec["output"].get("per_position", False)
    out = open(args.out, "w", newline="") if args.out else sys.stdout
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["index", "prediction", "probability"] if classes or next_byte else ["index", "prediction"])
    with torch.no_grad():
        for start in range(0, len(inputs), BATCH):
            scores = model(inputs[start:start + BATCH])
            for i, row in enumerate(scores):
                if classes or next_byte:
                    # A language model's row holds a position each: the last one scores the byte after the window.
                    p, k = (row[-1] if next_byte else row).max(0)
                    writer.writerow([names[start + i] if names else start + i, int(k) if next_byte else classes[int(k)], f"{float(p):.4f}"])
                else:
                    writer.writerow([names[start + i] if names else start + i, f"{float(row.reshape(-1)[0]):.6g}"])
    if args.out:
        out.close()


if __name__ == "__main__":
    main()
