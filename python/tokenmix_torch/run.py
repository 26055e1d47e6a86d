"""tokenmix run directories, format 1 (docs/model.md, "Run directory"):

    DIR/config.json  DIR/run.json  DIR/metrics.jsonl
    DIR/ckpt/<step>/weights.safetensors  optim.safetensors  state.json

load_run reads a run's newest complete checkpoint (or a given one), or an
exported model (config.json and weights.safetensors only); save_run writes a
checkpoint as tokenmix does: into DIR/ckpt/.tmp-<step>/, every file fsynced,
renamed to DIR/ckpt/<step>/ (8-digit step) and DIR/ckpt fsynced, then the
oldest checkpoints beyond keep_checkpoints and leftover .tmp-* removed.
"""
import datetime
import hashlib
import json
import os
import shutil

import torch

from . import config as cfgmod
from . import st
from .model import Model

FORMAT = 1
VERSION = "tokenmix_torch 0.1.0"
CONFIG, INFO, CKPT = "config.json", "run.json", "ckpt"
WEIGHTS, OPTIM, STATE = "weights.safetensors", "optim.safetensors", "state.json"
METRICS = "metrics.jsonl"
TMP = ".tmp-"


def _json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise ValueError(f"{path}: missing") from None
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not valid JSON: {e}") from None


def checkpoints(run_dir):
    """The steps of the complete checkpoints of run_dir, ascending."""
    root = os.path.join(run_dir, CKPT)
    if not os.path.isdir(root):
        return []
    return sorted(int(n) for n in os.listdir(root) if n.isdigit() and os.path.isdir(os.path.join(root, n)))


def ckpt_path(run_dir, step):
    return os.path.join(run_dir, CKPT, f"{step:08d}")


def read_info(run_dir):
    """run.json of run_dir, checked to be format 1."""
    p = os.path.join(run_dir, INFO)
    info = _json(p)
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        raise ValueError(f"{p}: format {info.get('format') if isinstance(info, dict) else None!r}, "
                         f"this package reads format {FORMAT}")
    return info


def verify(ckpt_dir, name):
    """Checks ckpt_dir/name against the SHA-256 checksum its state.json
    records (checkpoints written before checksums have none to check).
    Raises a ValueError naming the file when they differ."""
    spath = os.path.join(ckpt_dir, STATE)
    if not os.path.exists(spath):
        return
    want = (_json(spath).get("checksums") or {}).get(name)
    if want is None:
        return
    path = os.path.join(ckpt_dir, name)
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror or e}") from None
    if "sha256:" + h.hexdigest() != want:
        raise ValueError(f"{path}: damaged: its SHA-256 differs from the checksum in {spath} "
                         "(tokenmix verify --run DIR checks every checkpoint)")


def load_run(run_dir, checkpoint=None, dtype=torch.float32, device=None):
    """The model stored at run_dir: a run directory's checkpoint (the newest
    complete one when checkpoint is None) or an exported model. The model's
    seed and step are the run's train.seed and the checkpoint's step (so LSH
    hashes as tokenmix does when it loads the run), label_names the class
    names of run.json. The model is in eval mode (no dropout): call .train()
    to train it. Errors are ValueErrors naming the file."""
    run_dir = os.fspath(run_dir)
    if not os.path.isdir(run_dir):
        raise ValueError(f"{run_dir}: not a directory")
    step, labels = 0, None
    if os.path.exists(os.path.join(run_dir, INFO)):
        info = read_info(run_dir)
        labels = info.get("label_names")
        steps = checkpoints(run_dir)
        if checkpoint is None:
            if not steps:
                raise ValueError(f"{run_dir}: no complete checkpoint yet")
            checkpoint = steps[-1]
        elif checkpoint not in steps:
            raise ValueError(f"{run_dir}: no checkpoint {checkpoint} (it has {steps})")
        step = checkpoint
        wpath = os.path.join(ckpt_path(run_dir, checkpoint), WEIGHTS)
        if not os.path.exists(wpath):
            raise ValueError(f"{wpath}: missing")
        verify(ckpt_path(run_dir, checkpoint), WEIGHTS)
        spath = os.path.join(ckpt_path(run_dir, checkpoint), STATE)
        if os.path.exists(spath) and _json(spath).get("stage") == "pretrain":
            raise ValueError(f"{run_dir}: checkpoint {checkpoint} is from the pretraining stage (train.pretrain): "
                             "it has no task head yet; use a checkpoint of the fine-tuning stage")
    else:
        if checkpoint is not None:
            raise ValueError(f"{run_dir}: an exported model has no checkpoint {checkpoint}")
        wpath = os.path.join(run_dir, WEIGHTS)
    cpath = os.path.join(run_dir, CONFIG)
    cfg = _json(cpath)
    try:
        model = Model(cfg, dtype=dtype)
    except ValueError as e:
        raise ValueError(f"{cpath}: {e}") from None
    tensors, meta = st.load(wpath)
    model.load_weights(tensors, wpath)
    if labels is None and "tokenmix.label_names" in meta:
        try:
            labels = json.loads(meta["tokenmix.label_names"])
        except json.JSONDecodeError:
            raise ValueError(f"{wpath}: metadata tokenmix.label_names is not JSON") from None
        step = int(meta.get("tokenmix.step", "0"))
    if labels is not None and len(labels) != model.cfg.get("n_classes", len(labels)):
        raise ValueError(f"{cpath}: {len(labels)} label names for n_classes {model.cfg.get('n_classes')}")
    model.step, model.label_names = step, labels
    if device is not None:
        model.to(device)
    return model.eval()


def create_run(run_dir, config, task, label_names=None):
    """Makes run_dir a run directory without checkpoints: config.json (the
    config dict as given) and run.json, written last, atomically."""
    os.makedirs(run_dir, exist_ok=True)
    st.write_sync(os.path.join(run_dir, CONFIG), (json.dumps(config, indent=2) + "\n").encode())
    info = {"format": FORMAT, "task": task, "label_names": label_names, "version": VERSION,
            "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    tmp = os.path.join(run_dir, TMP + INFO)
    st.write_sync(tmp, (json.dumps(info, indent=2) + "\n").encode())
    os.replace(tmp, os.path.join(run_dir, INFO))
    st.sync_dir(run_dir)


def read_state(run_dir, step):
    """state.json of the checkpoint of step, checked to name that step."""
    p = os.path.join(ckpt_path(run_dir, step), STATE)
    sd = _json(p)
    if not isinstance(sd, dict) or sd.get("step") != step:
        raise ValueError(f"{p}: step {sd.get('step') if isinstance(sd, dict) else None!r} in a checkpoint named {step}")
    return sd


def append_metrics(run_dir, rec):
    """Appends rec as one line of run_dir/metrics.jsonl."""
    with open(os.path.join(run_dir, METRICS), "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")


def trim_metrics(run_dir, step, stage="train"):
    """Drops the metrics lines logged after step, and in stage "pretrain"
    every line of stage "train" (atomically), as a resumed run does before
    it logs them again."""
    p = os.path.join(run_dir, METRICS)
    if not os.path.exists(p):
        return
    keep = []
    with open(p) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                s = rec["step"]
            except (json.JSONDecodeError, KeyError, TypeError):
                raise ValueError(f"{p}:{n}: not a metrics line (a JSON object with a \"step\")") from None
            if s <= step and not (stage == "pretrain" and rec.get("stage") == "train"):
                keep.append(line.rstrip("\n") + "\n")
    st.write_sync(p + ".tmp", "".join(keep).encode())
    os.replace(p + ".tmp", p)
    st.sync_dir(run_dir)


def load_optimizer(run_dir, model, optimizer, checkpoint=None):
    """Restores torch.optim.AdamW state from a checkpoint's optim.safetensors
    (m.<name>, v.<name>, metadata step) into optimizer, whose parameters are
    model's. Returns the step."""
    if checkpoint is None:
        steps = checkpoints(run_dir)
        if not steps:
            raise ValueError(f"{run_dir}: no complete checkpoint yet")
        checkpoint = steps[-1]
    verify(ckpt_path(run_dir, checkpoint), OPTIM)
    path = os.path.join(ckpt_path(run_dir, checkpoint), OPTIM)
    tensors, meta = st.load(path)
    try:
        step = int(meta["step"])
    except (KeyError, ValueError):
        raise ValueError(f"{path}: metadata step {meta.get('step')!r} is not a step count") from None
    for name, p in model.named_parameters():
        for k in ("m", "v"):
            if f"{k}.{name}" not in tensors:
                raise ValueError(f"{path}: missing tensor {k}.{name}")
        m, v = tensors[f"m.{name}"], tensors[f"v.{name}"]
        if list(m.shape) != list(p.shape) or list(v.shape) != list(p.shape):
            raise ValueError(f"{path}: tensor m/v.{name}: shape {list(m.shape)}, want {list(p.shape)}")
        optimizer.state[p] = {"step": torch.tensor(float(step)), "exp_avg": m.to(p.dtype).to(p.device).clone(),
                              "exp_avg_sq": v.to(p.dtype).to(p.device).clone()}
    return step


def save_run(model, run_dir, step, optimizer=None, state=None, keep=None, label_names=None, optim_step=None):
    """Writes model's weights (F32), optimizer's AdamW moments (when given)
    and state.json as the checkpoint of step in run_dir, creating the run
    directory (config.json, run.json) when it has none. An existing run must
    hold the same config. state adds to or overrides state.json's fields
    (planned_steps, data, tokens, train_s, wall_s, loss_sum, loss_steps).
    keep (default the config's train.keep_checkpoints) complete checkpoints
    are kept. Without an optimizer no optim.safetensors is written, and
    `tokenmix train --resume` cannot resume from the checkpoint. optim_step
    (default step) is the optimizer's update count, the stage's own in a
    run with a pretraining stage (state stage_start = step − optim_step)."""
    run_dir = os.fspath(run_dir)
    if not isinstance(step, int) or step < 0:
        raise ValueError(f"step: want an integer ≥ 0, got {step!r}")
    tc = cfgmod.train(model.cfg)
    labels = label_names if label_names is not None else getattr(model, "label_names", None)
    if os.path.exists(os.path.join(run_dir, INFO)):
        read_info(run_dir)
        cpath = os.path.join(run_dir, CONFIG)
        old = _json(cpath)
        if cfgmod.check(old) != cfgmod.check(model.config):
            raise ValueError(f"{cpath}: the run holds another config than the model's")
    else:
        create_run(run_dir, model.config, model.cfg["task"], labels)
    root = os.path.join(run_dir, CKPT)
    os.makedirs(root, exist_ok=True)
    final = ckpt_path(run_dir, step)
    if os.path.exists(final):
        raise ValueError(f"{final}: a checkpoint of step {step} exists already")
    files = {WEIGHTS: st.dumps(model.weights())}
    if optimizer is not None:
        files[OPTIM] = st.dumps(optimizer_tensors(model, optimizer),
                                {"step": str(step if optim_step is None else optim_step)})
    sd = {"step": step, "planned_steps": tc["steps"], "data": None, "tokens": 0, "train_s": 0.0,
          "wall_s": 0.0, "loss_sum": 0.0, "loss_steps": 0}
    sd.update(state or {})
    sd["step"], sd["version"] = step, VERSION
    # The other files' SHA-256, which Go's Load, resume and `tokenmix verify` check.
    sd["checksums"] = {name: "sha256:" + hashlib.sha256(data).hexdigest() for name, data in files.items()}
    files[STATE] = (json.dumps(sd, indent=2) + "\n").encode()
    metrics = os.path.join(run_dir, METRICS)
    if os.path.exists(metrics):
        with open(metrics, "rb+") as f:
            os.fsync(f.fileno())
    tmp = os.path.join(root, TMP + os.path.basename(final))
    shutil.rmtree(tmp, ignore_errors=True)
    os.mkdir(tmp)
    for name, data in files.items():
        st.write_sync(os.path.join(tmp, name), data)
    st.sync_dir(tmp)
    os.rename(tmp, final)
    st.sync_dir(root)
    prune(run_dir, keep if keep is not None else tc["keep_checkpoints"])
    return final


def optimizer_tensors(model, optimizer):
    """m.<name> and v.<name> (F32) of every parameter from AdamW's state
    (zeros for a parameter not yet stepped)."""
    out = {}
    for name, p in model.named_parameters():
        s = optimizer.state.get(p, {})
        out["m." + name] = s.get("exp_avg", torch.zeros_like(p)).detach().to("cpu", torch.float32)
        out["v." + name] = s.get("exp_avg_sq", torch.zeros_like(p)).detach().to("cpu", torch.float32)
    return out


def prune(run_dir, keep):
    """Removes every .tmp-* in DIR/ckpt and all but the newest keep
    checkpoints (renamed to .tmp-old-* first, so a step-named directory is
    always complete)."""
    root = os.path.join(run_dir, CKPT)
    for n in os.listdir(root):
        if n.startswith(TMP):
            shutil.rmtree(os.path.join(root, n), ignore_errors=True)
    steps = checkpoints(run_dir)
    for s in steps[:max(0, len(steps) - max(keep, 1))]:
        old = ckpt_path(run_dir, s)
        gone = os.path.join(root, TMP + "old-" + os.path.basename(old))
        os.rename(old, gone)
        shutil.rmtree(gone)
    st.sync_dir(root)
