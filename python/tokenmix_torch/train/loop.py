"""`tokenmix train`'s loop (Go's internal/train.Run) on one rank of a run.

Every rank draws the same global batch of B and reads its rows
(dist.rows); the model is wrapped in DistributedDataParallel, which
averages the gradients over the W ranks. Each rank's loss is its targets'
summed cross-entropy times W / (the global batch's number of targets), so
the averaged gradient is the gradient of the global batch's mean loss: W
processes on B/W rows make the update one process makes on B. Rank 0 writes
the metrics and checkpoints; a resumed run restores every rank from the
newest checkpoint.
"""
import json
import math
import os
import signal
import sys
import time

import torch
import torch.distributed as tdist
import torch.nn.functional as F

from .. import config as cfgmod
from .. import data as datamod
from .. import run as runmod
from .. import tokenizer as tokmod
from ..model import Model
from . import dist, init, optimizer, pretrain, schedule


class Job:
    """What prepare checked: the resolved config, its train settings, the
    data and the run directory's state."""


def resolve(cfg):
    """cfg validated, with the optional keys and every train setting filled in
    (what config.json of the run holds)."""
    c = cfgmod.check(cfg)
    c["train"] = cfgmod.train(c)
    return c


def prepare(o, world):
    """Checks the flags, the config, the data and --out for a run on world
    processes; errors are ValueErrors saying what is wrong."""
    j = Job()
    j.latest = -1
    info_path = os.path.join(o.out, runmod.INFO)
    if o.resume:
        if not os.path.exists(info_path):
            raise ValueError(f"train --resume: {o.out} holds no run ({runmod.INFO} missing)")
        info = runmod.read_info(o.out)
        cpath = os.path.join(o.out, runmod.CONFIG)
        try:
            cfg = resolve(runmod._json(cpath))
        except ValueError as e:
            raise ValueError(f"{cpath}: {e}") from None
        if o.config and resolve(cfgmod.load(o.config)) != cfg:
            raise ValueError("train --resume: --config differs from the run's saved config "
                             "(drop --config to resume with the saved one)")
        steps = runmod.checkpoints(o.out)
        j.latest = steps[-1] if steps else -1
        j.run_labels = info.get("label_names")
    else:
        if os.path.exists(info_path):
            raise ValueError(f"train: {o.out} already holds a run; use --resume or another --out")
        cfg = resolve(cfgmod.load(o.config))
    j.cfg, tc = cfg, cfg["train"]
    j.tc = tc
    if cfg["precision"] == "fp16":
        raise ValueError('precision "fp16" (half storage with dynamic loss scaling) is trained by tokenmix '
                         'in Go only; this trainer runs "fp32" and "bf16" (bfloat16 autocast)')
    if cfg["precision"] == "bf16":
        o.bf16 = True  # the config's precision, as --bf16 asks
    if o.val and cfg["task"] != "classify":
        raise ValueError(f"train: --val applies to a classifier (task \"classify\"), not task {cfg['task']!r}")
    if tc["batch_size"] % world:
        raise ValueError(f"train.batch_size {tc['batch_size']} does not split over {world} processes: "
                         "make it a multiple of the process count")
    for i, st in enumerate(tc.get("curriculum", [])):
        if st["batch_size"] % world:
            raise ValueError(f"train.curriculum[{i}].batch_size {st['batch_size']} does not split over {world} "
                             "processes: make it a multiple of the process count")
    Model(cfg)  # the mixer's options
    j.labels = None
    # The tokenizer the config names: the run's copy, or the file beside the
    # config, which the new run copies as tokenizer.json.
    j.tok, j.tok_file, j.token_bytes = None, None, None
    if cfg.get("tokenizer"):
        if cfg.get("tokenizer_pattern"):
            raise ValueError("tokenizer: tokenmix_torch reads a tokenizer.json; a tiktoken rank file "
                             "(tokenizer_pattern) is read by tokenmix in Go")
        base = o.out if o.resume else os.path.dirname(o.config)
        j.tok_file = os.path.join(base, cfg["tokenizer"])
        j.tok = tokmod.load(j.tok_file)
        if j.tok.vocab_size > cfg["vocab_size"]:
            raise ValueError(f"tokenizer: {j.tok_file} has {j.tok.vocab_size} ids, above vocab_size {cfg['vocab_size']}")
        if cfg["task"] != "lm":
            raise ValueError("tokenizer: tokenmix_torch reads text through a tokenizer for an lm's text only")
        cfg["tokenizer"] = "tokenizer.json"
        j.token_bytes = torch.tensor(j.tok.token_bytes(), dtype=torch.float64)
    if cfg["task"] == "lm":
        if cfg["vocab_size"] < 256 and j.tok is None:
            raise ValueError(f"train: byte-level text needs vocab_size ≥ 256, the config has {cfg['vocab_size']}")
        j.train, j.val = datamod.load_text(o.data, o.val_frac, tc["seq_len"])
        unit = "bytes"
        if j.tok is not None:
            j.train = torch.tensor(j.tok.encode(j.train), dtype=torch.long)
            j.val = torch.tensor(j.tok.encode(j.val), dtype=torch.long)
            unit = "tokens"
            if len(j.train) <= tc["seq_len"] or len(j.val) <= tc["seq_len"]:
                raise ValueError(f"{o.data}: {len(j.train)} training and {len(j.val)} validation tokens is too "
                                 f"little for windows of {tc['seq_len'] + 1} tokens")
        j.what = f"{len(j.train)} training and {len(j.val)} validation {unit}"
    else:
        recs = datamod.read_records(o.data)
        val = datamod.read_records(o.val) if o.val else None
        pc = tc.get("pretrain")
        if pc and pc["objective"] == "mlm":
            for tokens, _, _, where in recs + (val or []):
                if pc["mask_id"] in tokens:
                    raise ValueError(f"train: {where}: uses token {pc['mask_id']}, the config's train.pretrain.mask_id "
                                     "(the mask token must not occur in the data)")
        names = datamod.label_names(recs)
        if len(names) != cfg["n_classes"]:
            raise ValueError(f"train: {o.data} has {len(names)} distinct labels ({', '.join(names)}), "
                             f"the config's n_classes is {cfg['n_classes']}")
        j.task = datamod.Labeled(cfg, recs, val, names, o.val_frac, tc["seed"])
        j.labels = names
        j.what = f"{len(j.task.train)} training and {len(j.task.val)} validation inputs, {len(names)} classes"
    if o.resume and j.run_labels != j.labels:
        raise ValueError(f"train --resume: the data's labels {j.labels} differ from the run's {j.run_labels}")
    if o.stop_at is not None and not 0 < o.stop_at:
        raise ValueError(f"--stop-at: want a step ≥ 1, got {o.stop_at}")
    return j


class Stop:
    """Set by SIGINT or SIGTERM: the run stops after the current step (on
    every rank) with a checkpoint. A second signal ends the process at once."""

    def __init__(self):
        self.flag, self.signum = False, signal.SIGTERM
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, self.set)

    def set(self, signum, frame):
        if self.flag:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        self.flag, self.signum = True, signum


def gradients(net, params, tokens, targets, n_targets, world, grad_clip, bf16, flag=False, smoothing=0.0):
    """Forward and backward of this rank's rows of a global batch with
    n_targets targets (label smoothing ε = smoothing), then clipping of the
    (averaged) gradients. Returns the global batch's mean loss, the gradient
    norm before clipping, and whether any rank had flag set."""
    with torch.autocast(tokens.device.type, dtype=torch.bfloat16, enabled=bf16):
        logits = net(tokens)
    s = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1),
                        ignore_index=-1, reduction="sum", label_smoothing=smoothing)
    (s * (world / n_targets)).backward()  # DDP averages: Σ over ranks / n_targets
    gn = torch.nn.utils.clip_grad_norm_(params, grad_clip if grad_clip > 0 else math.inf).item()
    red = torch.stack([s.detach().double(), torch.tensor(float(flag), dtype=torch.float64, device=s.device)])
    if world > 1:
        tdist.all_reduce(red)
    return red[0].item() / n_targets, gn, red[1].item() > 0


def evaluate(j, model, topo, device, bf16):
    """The validation metrics, computed over every rank's share."""
    tc, B, T = j.tc, j.tc["batch_size"], j.tc["seq_len"]
    acc = torch.zeros(3, dtype=torch.float64, device=device)  # summed loss, targets, correct (lm: bytes)
    model.eval()
    with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        if j.cfg["task"] == "lm":
            rng = datamod.val_rng(tc["seed"])
            for _ in range(tc["eval_batches"]):
                tok, tgt = datamod.text_batch(j.val, B, T, rng, dist.rows(B, topo.rank, topo.world))
                logits = model(tok.to(device)).float()
                acc[0] += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1).to(device),
                                          reduction="sum").double()
                acc[1] += tgt.numel()
                # bytes of the targets: their tokens' through a tokenizer
                acc[2] += tgt.numel() if j.token_bytes is None else j.token_bytes[tgt].sum().item()
        else:
            val = j.task.val
            for k in range(tc["eval_batches"]):
                idx = list(range(k * B, min((k + 1) * B, len(val))))
                if not idx:
                    break
                tok, tgt = j.task.batch(val, idx)
                r = dist.rows(len(idx), topo.rank, topo.world)
                if not len(r):
                    continue
                tok, tgt = tok[r.start:r.stop].to(device), tgt[r.start:r.stop].to(device)
                logits = model(tok).float()
                acc[0] += F.cross_entropy(logits, tgt, reduction="sum").double()
                acc[1] += len(r)
                acc[2] += (logits.argmax(-1) == tgt).sum()
    model.train()
    if topo.world > 1:
        tdist.all_reduce(acc)
    loss = (acc[0] / acc[1]).item()
    if j.cfg["task"] == "lm":
        return {"val_loss": loss, "val_bits_per_byte": (acc[0] / acc[2]).item() / math.log(2)}
    return {"val_loss": loss, "val_accuracy": (acc[2] / acc[1]).item()}


def say(topo, msg, out=sys.stderr):
    if topo.rank == 0:
        print(msg, file=out, flush=True)


def train(o, topo, j):
    """Runs (or resumes) the run of flags o, prepared as j, on this rank;
    returns the exit code. The process group must be joined (dist.init).

    With train.pretrain the run has two stages, as Go's train.Run: the
    model of the pretraining stage (Model(cfg, stage="pretrain"), head
    pretrain_head) trains on the pretraining batches (pretrain.batch) for
    train.pretrain.steps updates; then the task model takes every tensor
    but the head from it, its head as init left it, and fine-tuning runs
    with a fresh optimizer and its own schedule from the run step the first
    stage reached. A checkpoint's state.json names its stage."""
    tc, cfg = j.tc, j.cfg
    device = torch.device(o.device if o.device == "cpu" else f"cuda:{topo.local_rank}")
    if device.type == "cuda":
        torch.cuda.set_device(device)
        # float32 means float32, as in Go: no TF32 products (--bf16 asks for lower precision).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    pc = tc.get("pretrain")
    st0 = runmod.read_state(o.out, j.latest) if j.latest >= 0 else {}
    stage = st0.get("stage", "train")
    if stage not in ("train", "pretrain"):
        raise ValueError(f"{runmod.ckpt_path(o.out, j.latest)}: unknown stage {stage!r}")
    if stage == "pretrain" and pc is None:
        raise ValueError(f"{o.out}: checkpoint {j.latest} is from a pretraining stage, and the config has no "
                         "train.pretrain")
    if topo.rank == 0 and j.latest < 0 and not o.resume:
        if j.tok is not None:  # before run.json: a complete run has its tokenizer
            os.makedirs(o.out, exist_ok=True)
            with open(j.tok_file, "rb") as f:
                runmod.st.write_sync(os.path.join(o.out, "tokenizer.json"), f.read())
        runmod.create_run(o.out, cfg, cfg["task"], j.labels)
    model = Model(cfg)
    model.label_names = j.labels
    init(model, tc["seed"])
    model.to(device)
    src = (datamod.TextSource(j.train, tc["batch_size"], tc["seq_len"], tc["seed"]) if cfg["task"] == "lm"
           else datamod.TaskSource(j.task, tc["batch_size"], tc["seed"]))
    if "curriculum" in tc:
        if cfg["task"] != "lm":
            raise ValueError("train.curriculum needs data that has shorter forms (text, for an lm); a classifier's "
                             "lines have their own lengths")
        src = datamod.Curriculum(src, tc["curriculum"], pc["steps"] if pc else 0)
    stop = Stop()
    latest, base, wall0 = j.latest, st0.get("stage_start", 0), 0.0
    if pc is not None and (j.latest < 0 or stage == "pretrain"):
        pm = Model(cfg, stage="pretrain")
        init(pm, tc["seed"])
        pm.to(device)
        r = run_stage(o, topo, j, pm, src, stop, "pretrain", j.latest, 0, 0.0)
        if r.stopped:
            return r.code
        # The switch: pretrain_head is dropped, the task head is init's.
        body = {k: v for k, v in pm.state_dict().items() if not k.startswith(cfgmod.PRETRAIN_HEAD + ".")}
        missing, unexpected = model.load_state_dict(body, strict=False)
        if sorted(missing) != ["head.bias", "head.weight"] or unexpected:
            raise ValueError(f"pretrained model: missing {missing}, unexpected {unexpected}")
        if topo.rank == 0:
            runmod.append_metrics(o.out, {"step": r.step, "stage": "train", "head_swap": {
                "dropped": [cfgmod.PRETRAIN_HEAD + ".weight", cfgmod.PRETRAIN_HEAD + ".bias"],
                "initialised": ["head.weight", "head.bias"]}})
        latest, base, wall0 = -1, r.step, r.wall
        del pm
    r = run_stage(o, topo, j, model, src, stop, "train", latest, base, wall0)
    if r.stopped:
        return r.code
    if topo.rank == 0:
        if o.json:
            out = {"steps": r.step - base, "tokens": r.tokens, "train_s": r.train_s, "checkpoint": r.ckpt,
                   "processes": topo.world}
            if pc is not None:
                out["pretrain_steps"] = base
            if r.last_eval is not None:
                out.update(r.last_eval)
            print(json.dumps(out), flush=True)
        else:
            v = f", validation loss {r.last_eval['val_loss']:.4f}" if r.last_eval else ""
            pre = f"pretrained {base} steps ({pc['objective']}); " if pc is not None else ""
            print(f"{pre}done: {r.step - base} steps, {r.tokens} tokens in {r.train_s:.0f}s{v}; checkpoint in "
                  f"{r.ckpt}", flush=True)
    return 0


class StageResult:
    """What run_stage ends with: the run step, the stage's tokens and
    training time, the wall time so far, the last evaluation, the
    checkpoint, and whether it stopped early (then the exit code)."""


def run_stage(o, topo, j, model, src, stop, stage, latest, base, wall0):
    """The training loop of one stage of the run (Go's runStage) on this
    rank: from the checkpoint of step latest (−1: a fresh stage at run step
    base, with wall0 seconds of wall time before it) until the stage's
    steps are done or it is stopped."""
    tc, cfg = cfgmod.train(model.cfg), j.cfg
    pc = j.tc.get("pretrain") if stage == "pretrain" else None
    device = next(model.parameters()).device
    opt = optimizer(model)
    st = {"step": base, "planned_steps": tc["steps"], "tokens": 0, "train_s": 0.0, "wall_s": wall0,
          "loss_sum": 0.0, "loss_steps": 0}
    if latest >= 0:
        ck = runmod.ckpt_path(o.out, latest)
        model.load_weights(os.path.join(ck, runmod.WEIGHTS))
        runmod.load_optimizer(o.out, model, opt, latest)
        st.update(runmod.read_state(o.out, latest))
        src.restore(st["step"], st.get("data"))
    model.step = st["step"]
    if topo.rank == 0:
        runmod.trim_metrics(o.out, st["step"], stage)
    if topo.world > 1:
        kw = {"device_ids": [device.index]} if device.type == "cuda" else {}
        net = torch.nn.parallel.DistributedDataParallel(model, **kw)
    else:
        net = model
    nparams = sum(p.numel() for p in model.parameters())
    what = f"pretraining ({pc['objective']}) on {j.what}" if pc else j.what
    say(topo, f"{nparams} parameters; {what}; {tc['steps']} steps on {topo.world} process"
              f"{'es' if topo.world > 1 else ''} ({device.type}{', bf16 autocast' if o.bf16 else ''})")
    def batch_size():  # the global batch of the next step: a curriculum stage's, or train.batch_size
        return src.shape()[0] if isinstance(src, datamod.Curriculum) else tc["batch_size"]
    planned, step, tokens = st["planned_steps"], st["step"], st["tokens"]
    train_s, loss_sum, loss_n = st["train_s"], st["loss_sum"], st["loss_steps"]
    start, skipped, last_eval, stopped, saved = time.monotonic(), 0, None, None, step

    def wall():
        return st["wall_s"] + time.monotonic() - start

    def save():
        if topo.rank == 0:
            runmod.save_run(model, o.out, step, opt, label_names=j.labels, optim_step=step - base, state={
                "planned_steps": planned, "data": src.state(), "tokens": tokens, "train_s": train_s,
                "wall_s": wall(), "loss_sum": loss_sum, "loss_steps": loss_n, "stage": stage, "stage_start": base})

    params = list(model.parameters())
    while step - base < planned:
        t0 = time.perf_counter()
        B = batch_size()
        rows = dist.rows(B, topo.rank, topo.world)
        if pc is None:
            tok, tgt, nt = src.next(rows)
        else:
            # The masks are drawn over the global batch; this rank reads its rows.
            tok, _, _ = src.next()
            tok, tgt = pretrain.batch(tok, cfg, pc, j.tc["seed"], step)
            nt = max(int((tgt != -1).sum()), 1)  # none: a loss of 0, as in Go
            tok, tgt = tok[rows.start:rows.stop], tgt[rows.start:rows.stop]
        opt.zero_grad(set_to_none=True)
        loss, gn, interrupted = gradients(net, params, tok.to(device), tgt.to(device), nt, topo.world,
                                          tc["grad_clip"], o.bf16, stop.flag,
                                          smoothing=tc["label_smoothing"] if pc is None else 0.0)
        lr = schedule(step - base, tc["lr"], tc["min_lr"], tc["warmup"], planned, tc["schedule"] == "constant")
        if not (math.isfinite(loss) and math.isfinite(gn)):
            what = f"loss {loss}, gradient norm {gn}"
            if skipped < o.skip_nonfinite:
                skipped += 1
                if topo.rank == 0:
                    runmod.append_metrics(o.out, {"step": step, "stage": stage, "skipped_nonfinite": skipped,
                                                  "nonfinite": what, "data": f"the batch of step {step + 1}"})
                say(topo, f"skipped step {step + 1}: {what}")
                continue
            say(topo, f"train: non-finite values at step {step + 1} ({what}); the run stops with its last "
                      "checkpoint untouched (--skip-nonfinite N passes over such steps)")
            r = StageResult()
            r.stopped, r.code = "non-finite", 1
            return r
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        step += 1
        model.step = step
        if device.type == "cuda":
            torch.cuda.synchronize()
        train_s += time.perf_counter() - t0
        tokens += tok.shape[1] * B
        loss_sum, loss_n = loss_sum + loss, loss_n + 1
        k = step - base
        last = k == planned
        ev = pc is None and tc["eval_every"] > 0 and (k % tc["eval_every"] == 0 or last)
        if k % tc["log_every"] == 0 or last or ev:
            rec = {"step": step, "stage": stage, "loss": loss_sum / loss_n, "lr": lr, "grad_norm": gn,
                   "tokens": tokens, "tokens_per_s": tokens / max(train_s, 1e-9), "elapsed_s": wall(),
                   "train_s": train_s}
            loss_sum, loss_n = 0.0, 0
            if ev:
                last_eval = evaluate(j, model, topo, device, o.bf16)
                rec.update(last_eval)
                say(topo, f"step {step}: validation loss {last_eval['val_loss']:.4f}" + (
                    f" ({last_eval['val_bits_per_byte']:.3f} bits/byte)" if "val_bits_per_byte" in last_eval
                    else f", accuracy {100 * last_eval['val_accuracy']:.2f}%"))
            if topo.rank == 0:
                runmod.append_metrics(o.out, rec)
            say(topo, f"{'pretrain ' if pc else ''}step {k}/{planned}: loss {rec['loss']:.4f}, "
                      f"{rec['tokens_per_s']:.0f} tokens/s")
        if interrupted or (o.stop_at is not None and step == o.stop_at and not last):
            stopped = "interrupted" if interrupted else "stopped (--stop-at)"
            break
        if tc["checkpoint_every"] > 0 and k % tc["checkpoint_every"] == 0 and not last:
            save()
            saved = step
    if step != saved or latest < 0:
        save()
    if topo.world > 1:
        tdist.barrier()
    r = StageResult()
    r.step, r.tokens, r.train_s, r.wall, r.last_eval = step, tokens, train_s, wall(), last_eval
    r.ckpt, r.stopped, r.code = runmod.ckpt_path(o.out, step), stopped, 0
    if stopped:
        say(topo, f"{stopped} at step {step}; checkpoint saved in {r.ckpt} (continue with --resume)")
        r.code = 128 + stop.signum if stopped == "interrupted" else 0
    return r


def run_rank(o, topo):
    """train on this rank inside its process group; a user error (a
    ValueError) is printed by rank 0 and gives exit code 1."""
    torch.set_num_threads(o.threads or max(1, (os.cpu_count() or 1) // topo.local_world))
    try:
        j = prepare(o, topo.world)  # before the rendezvous, so that no rank sees the run rank 0 creates
        dist.init(topo, o.device)
        return train(o, topo, j)
    except ValueError as e:
        say(topo, f"tokenmix_torch.train: {e}")
        return 1
    except OSError as e:  # e.g. --out not writable
        say(topo, f"tokenmix_torch.train: {e.filename or ''}: {e.strerror or e}")
        return 1
    finally:
        dist.finish(topo)


def worker(rank, o, world):
    """The body of process rank of --nproc world (torch.multiprocessing.spawn)."""
    code = run_rank(o, dist.Topology(rank, world, rank, world))
    if code:
        sys.exit(code)
