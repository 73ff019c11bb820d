"""Reads an export back with each tracker's own reader and prints what it found as one JSON
document, for test/cli/from.test.ts to hold against the stored events. One process for the
three formats: each library's import costs seconds.

    read_back.py --tensorboard DIR --mlflow DIR --wandb DIR [--live DIR] [--project NAME]

- TensorBoard: through TensorBoard's own data provider over its plugin event multiplexer (what
  `tensorboard --logdir` serves from): scalars, images, and each trial's hparams session.
- MLflow: MlflowClient over the file store: runs, params, tags, metric histories, artifacts.
- W&B: each offline run's .wandb transaction log, record by record, with wandb's own Record
  protobuf (what `wandb sync` uploads).
"""

import argparse
import glob
import json
import os
import struct
import zlib


def tensorboard(logdir):
    from tensorboard import context
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
    from tensorboard.plugins.hparams import metadata as hparams_metadata

    multiplexer = plugin_event_multiplexer.EventMultiplexer(tensor_size_guidance={"scalars": 0, "images": 0, "text": 0, "hparams": 0})
    multiplexer.AddRunsFromDirectory(logdir)
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, logdir)
    ctx = context.RequestContext()
    scalars = provider.read_scalars(ctx, experiment_id="", plugin_name="scalars", downsample=100000)
    out = {"scalars": {run: {tag: [[p.step, p.value] for p in points] for tag, points in tags.items()} for run, tags in scalars.items()}}
    images = provider.list_blob_sequences(ctx, experiment_id="", plugin_name="images")
    out["images"] = {run: sorted(tags) for run, tags in images.items()}
    out["image_blobs"] = {}
    for run, tags in images.items():
        for tag in tags:
            seqs = provider.read_blob_sequences(ctx, experiment_id="", plugin_name="images", downsample=10, run_tag_filter=_filter(run, tag))
            (datum,) = seqs[run][tag]
            width, height, png = (provider.read_blob(ctx, blob_key=b.blob_key) for b in datum.values)
            out["image_blobs"][f"{run}/{tag}"] = {"width": int(width), "height": int(height), "png_magic": png[:8].hex()}
    texts = provider.read_tensors(ctx, experiment_id="", plugin_name="text", downsample=10)
    out["text"] = {run: {tag: points[-1].numpy.item().decode() for tag, points in tags.items()} for run, tags in texts.items()}
    sessions = {}
    for run, tags in provider.list_tensors(ctx, experiment_id="", plugin_name=hparams_metadata.PLUGIN_NAME).items():
        for tag, meta in tags.items():
            if tag == hparams_metadata.SESSION_START_INFO_TAG:
                info = hparams_metadata.parse_session_start_info_plugin_data(meta.plugin_content)
                sessions[run] = {k: _value(v) for k, v in info.hparams.items()}
            elif tag == hparams_metadata.EXPERIMENT_TAG:
                experiment = hparams_metadata.parse_experiment_plugin_data(meta.plugin_content)
                out.setdefault("experiments", {})[run] = {"hparams": sorted(h.name for h in experiment.hparam_infos), "metrics": sorted(m.name.tag for m in experiment.metric_infos)}
    out["sessions"] = sessions
    return out


def _filter(run, tag):
    from tensorboard.data import provider

    return provider.RunTagFilter(runs=[run], tags=[tag])


def _value(v):
    kind = v.WhichOneof("kind")
    return getattr(v, kind) if kind else None


def mlflow(dest, project):
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri="file://" + os.path.abspath(dest))
    experiment = client.get_experiment_by_name(project)
    runs = client.search_runs([experiment.experiment_id], max_results=50000)
    out = {}
    for r in runs:
        keys = list(r.data.metrics)
        out[r.info.run_id] = {
            "name": r.info.run_name,
            "status": r.info.status,
            "params": r.data.params,
            "tags": {k: v for k, v in r.data.tags.items() if not k.startswith("mlflow.") or k == "mlflow.parentRunId"},
            "metrics": {k: sorted([m.step, m.value] for m in client.get_metric_history(r.info.run_id, k)) for k in keys},
            "artifacts": sorted(a.path for a in client.list_artifacts(r.info.run_id)),
        }
    return out


def wandb_records(path):
    """The records of a .wandb transaction log. wandb 0.31 reads it in its Go core alone (the
    Python DataStore is gone), so its framing is read here: LevelDB's log format (32 KiB blocks,
    records split into first/middle/last pieces, each with a CRC-32 seeded by its type) after a
    7-byte file header; each record is wandb's own protobuf Record."""
    with open(path, "rb") as f:
        data = f.read()
    ident, magic, version = struct.unpack("<4sHB", data[:7])
    assert (ident, magic, version) == (b":W&B", 0xBEE1, 0), f"{path}: not a W&B transaction log"
    block, header, pos, pending = 32768, 7, 7, b""
    while pos + header <= len(data):
        left = block - pos % block
        if left < header:
            pos += left
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos:pos + header])
        if kind == 0:  # the zeros that fill a block's end
            pos += left
            continue
        body = data[pos + header:pos + header + length]
        assert zlib.crc32(body, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF == crc, f"{path}: bad checksum at {pos}"
        pos += header + length
        if kind == 1:
            yield body
        elif kind == 2:
            pending = body
        elif kind == 3:
            pending += body
        elif kind == 4:
            yield pending + body


def wandb(dest):
    from wandb.proto import wandb_internal_pb2 as pb

    out = {}
    for path in sorted(glob.glob(os.path.join(dest, "wandb", "offline-run-*", "run-*.wandb"))):
        run = {"dir": os.path.basename(os.path.dirname(path)), "history": [], "config": {}, "summary": {}, "files": [], "exit_code": None}
        for data in wandb_records(path):
            rec = pb.Record()
            rec.ParseFromString(data)
            kind = rec.WhichOneof("record_type")
            if kind == "run":
                r = rec.run
                run.update(id=r.run_id, project=r.project, group=r.run_group, job_type=r.job_type, name=r.display_name, tags=list(r.tags), notes=r.notes)
                run["config"].update({i.key: json.loads(i.value_json) for i in r.config.update})
            elif kind == "config":
                run["config"].update({i.key: json.loads(i.value_json) for i in rec.config.update})
            elif kind == "history":
                run["history"].append({(i.key or "/".join(i.nested_key)): json.loads(i.value_json) for i in rec.history.item})
            elif kind == "summary":
                run["summary"].update({(i.key or "/".join(i.nested_key)): json.loads(i.value_json) for i in rec.summary.update})
            elif kind == "files":
                run["files"] += [f.path for f in rec.files.files]
            elif kind == "exit":
                run["exit_code"] = rec.exit.exit_code
        # A config value is stored as {"value": ...}; W&B's own keys start with "_".
        run["config"] = {k: v.get("value") if isinstance(v, dict) else v for k, v in run["config"].items() if not k.startswith("_")}
        out[run["id"]] = run
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tensorboard")
    p.add_argument("--live", help="a TensorBoard folder a launch streamed into (launch --export)")
    p.add_argument("--mlflow")
    p.add_argument("--wandb")
    p.add_argument("--project", default="research-swarm")
    a = p.parse_args()
    out = {}
    if a.tensorboard:
        out["tensorboard"] = tensorboard(a.tensorboard)
    if a.live:
        out["live"] = tensorboard(a.live)
    if a.mlflow:
        out["mlflow"] = mlflow(a.mlflow, a.project)
    if a.wandb:
        out["wandb"] = wandb(a.wandb)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
