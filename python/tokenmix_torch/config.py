"""The model config of docs/model.md, validated as tokenmix validates it:
unknown keys, wrong types and invalid values are ValueErrors naming the key."""
import json

KEYS = {"vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len", "causal", "task", "n_classes",
        "pad_id", "pool", "reversible", "checkpoint", "ff_chunks", "precision", "dropout", "tokenizer", "tokenizer_pattern", "chat_template", "temperature", "mixer", "train"}
TRAIN_DEFAULTS = dict(batch_size=8, seq_len=None, steps=1000, lr=3e-4, min_lr=0.0, warmup=0, weight_decay=0.0,
                      grad_clip=1.0, beta1=0.9, beta2=0.999, eps=1e-8, seed=0, log_every=10, eval_every=100,
                      eval_batches=4, checkpoint_every=0, keep_checkpoints=2, label_smoothing=0.0,
                      schedule="cosine")
TRAIN_INTS = {"batch_size", "seq_len", "steps", "warmup", "seed", "log_every", "eval_every", "eval_batches",
              "checkpoint_every", "keep_checkpoints"}
MAX_LAYERS, MAX_HEADS = 16384, 65536
PRETRAIN_KEYS = {"objective", "steps", "mask_rate", "mask_id", "lr", "min_lr", "warmup"}
PRETRAIN_HEAD = "pretrain_head"


def _int(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and float(v).is_integer()


def check(cfg):
    """Validates the config dict cfg and returns it with the optional keys'
    defaults filled in (a new dict; "train" keeps only what was given)."""
    if not isinstance(cfg, dict):
        raise ValueError("config: want a JSON object")
    for k in sorted(set(cfg) - KEYS):
        raise ValueError(f"{k}: unknown key")
    c = dict(cfg)
    for k in ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_len"):
        if k not in c:
            raise ValueError(f"{k}: required")
        if not _int(c[k]) or c[k] < 1:
            raise ValueError(f"{k}: must be an integer ≥ 1, got {c[k]!r}")
        c[k] = int(c[k])
    for k in ("task", "mixer"):
        if k not in c:
            raise ValueError(f"{k}: required")
    if "chat_template" in c:
        # How Go renders conversations (internal/chat); the twin trains on
        # rendered sequences, so it only checks the object's shape.
        t = c["chat_template"]
        if not isinstance(t, dict) or set(t) - {"message", "prompt", "stop"} or not all(isinstance(v, str) for v in t.values()):
            raise ValueError(f"chat_template: want an object of strings message, prompt and stop, got {t!r}")
    for k in ("causal", "reversible", "checkpoint"):
        c.setdefault(k, False)
        if not isinstance(c[k], bool):
            raise ValueError(f"{k}: want true or false, got {c[k]!r}")
    if c["d_model"] % c["n_heads"]:
        raise ValueError(f"n_heads: must divide d_model ({c['d_model']} % {c['n_heads']} ≠ 0)")
    if c["n_layers"] > MAX_LAYERS:
        raise ValueError(f"n_layers: must be ≤ {MAX_LAYERS}, got {c['n_layers']}")
    if c["n_heads"] > MAX_HEADS:
        raise ValueError(f"n_heads: must be ≤ {MAX_HEADS}, got {c['n_heads']}")
    if c["task"] == "classify":
        if not _int(c.get("n_classes")) or c["n_classes"] < 2:
            raise ValueError(f"n_classes: must be ≥ 2 for task \"classify\", got {c.get('n_classes')!r}")
        c.setdefault("pool", "mean")
        if c["pool"] not in ("mean", "first"):
            raise ValueError(f"pool: must be \"mean\" or \"first\", got {c['pool']!r}")
    elif c["task"] == "embed":
        if "n_classes" in c:
            raise ValueError('n_classes: not for task "embed" (its head is d_model wide)')
        c.setdefault("temperature", 0.05)
        if not isinstance(c["temperature"], (int, float)) or not 0 < c["temperature"] <= 10:
            raise ValueError(f"temperature: must be in (0, 10], got {c['temperature']!r}")
        c.setdefault("pool", "mean")
        if c["pool"] not in ("mean", "first"):
            raise ValueError(f"pool: must be \"mean\" or \"first\", got {c['pool']!r}")
    elif c["task"] == "tag":
        if not _int(c.get("n_classes")) or c["n_classes"] < 2:
            raise ValueError(f"n_classes: must be ≥ 2 for task \"tag\" (the tags: O, and B- and I- of each label), "
                             f"got {c.get('n_classes')!r}")
        if "pool" in c:
            raise ValueError('pool: only for task "classify"')
    elif c["task"] == "lm":
        if "n_classes" in c:
            raise ValueError('n_classes: only for task "classify"')
        if "pool" in c:
            raise ValueError('pool: only for task "classify"')
    else:
        raise ValueError(f"task: must be \"lm\", \"classify\", \"tag\" or \"embed\", got {c['task']!r}")
    if "temperature" in c and c["task"] != "embed":
        raise ValueError('temperature: only for task "embed"')
    if "pad_id" in c and c["pad_id"] is not None:
        if not _int(c["pad_id"]) or not 0 <= c["pad_id"] < c["vocab_size"]:
            raise ValueError(f"pad_id: must be in [0, vocab_size={c['vocab_size']}), got {c['pad_id']!r}")
    if c["reversible"] and c["checkpoint"]:
        raise ValueError("checkpoint: not with reversible (reversible blocks already recompute in backward)")
    c.setdefault("ff_chunks", 1)
    if not _int(c["ff_chunks"]) or c["ff_chunks"] < 1:
        raise ValueError(f"ff_chunks: must be an integer ≥ 1, got {c['ff_chunks']!r}")
    c.setdefault("dropout", 0.0)
    d = c["dropout"]
    if not isinstance(d, (int, float)) or isinstance(d, bool):
        raise ValueError(f"dropout: want a number, got {d!r}")
    if not 0 <= d < 1:
        raise ValueError(f"dropout: must be in [0, 1), got {d!r}")
    c.setdefault("precision", "fp32")
    if c["precision"] not in ("fp32", "bf16", "fp16"):
        raise ValueError(f"precision: must be \"fp32\", \"bf16\" or \"fp16\", got {c['precision']!r}")
    m = c["mixer"]
    if not isinstance(m, dict) or not isinstance(m.get("kind"), str):
        raise ValueError('mixer: want an object with a "kind"')
    if "train" in c:
        tc = train(c)
        if "pretrain" in tc:
            _check_pretrain(c, tc["pretrain"])
    return c


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def pretrain(t, tc):
    """The resolved train.pretrain object of the train dict t, whose other
    settings (resolved) are tc: Go's parsePretrain."""
    p = t["pretrain"]
    if not isinstance(p, dict):
        raise ValueError(f"train.pretrain: want a JSON object, got {json.dumps(p)}")
    for k in sorted(set(p) - PRETRAIN_KEYS):
        raise ValueError(f"train.pretrain.{k}: unknown key")
    for k, v in p.items():
        if v is None:
            want = {"objective": "a string", "steps": "an integer", "mask_id": "an integer", "warmup": "an integer"}
            raise ValueError(f"train.pretrain.{k}: want {want.get(k, 'a number')}, got null")
    if "objective" not in p:
        raise ValueError('train.pretrain.objective: required ("mlm" or "lm")')
    if not isinstance(p["objective"], str):
        raise ValueError(f"train.pretrain.objective: want a string, got {p['objective']!r}")
    if "steps" not in p:
        raise ValueError("train.pretrain.steps: required")
    for k in ("steps", "mask_id", "warmup"):
        if k in p and not _int(p[k]):
            raise ValueError(f"train.pretrain.{k}: want an integer, got {p[k]!r}")
    for k in ("mask_rate", "lr", "min_lr"):
        if k in p and not _num(p[k]):
            raise ValueError(f"train.pretrain.{k}: want a number, got {p[k]!r}")
    out = {"objective": p["objective"], "steps": int(p["steps"]), "lr": float(p.get("lr", tc["lr"])),
           "min_lr": float(p.get("min_lr", tc["min_lr"])), "warmup": int(p.get("warmup", tc["warmup"]))}
    obj = out["objective"]
    if obj == "mlm":
        if "mask_id" not in p:
            raise ValueError('train.pretrain.mask_id: required for objective "mlm" (a token id below vocab_size '
                             'that the data does not use)')
        out["mask_rate"], out["mask_id"] = float(p.get("mask_rate", 0.15)), int(p["mask_id"])
    elif obj == "lm":
        for k in ("mask_rate", "mask_id"):
            if k in p:
                raise ValueError(f'train.pretrain.{k}: only for objective "mlm"')
    else:
        raise ValueError(f'train.pretrain.objective: must be "mlm" or "lm", got {obj!r}')
    if out["steps"] < 1:
        raise ValueError(f"train.pretrain.steps: must be ≥ 1, got {out['steps']}")
    if obj == "mlm" and not 0 < out["mask_rate"] <= 1:
        raise ValueError(f"train.pretrain.mask_rate: must be in (0, 1], got {p['mask_rate']!r}")
    if obj == "mlm" and out["mask_id"] < 0:
        raise ValueError(f"train.pretrain.mask_id: must be ≥ 0, got {out['mask_id']}")
    if not out["lr"] > 0:
        raise ValueError(f"train.pretrain.lr: must be > 0, got {out['lr']}")
    if not 0 <= out["min_lr"] <= out["lr"]:
        raise ValueError(f"train.pretrain.min_lr: must be in [0, lr={out['lr']}], got {out['min_lr']} "
                         "(it defaults to train.min_lr)")
    if out["warmup"] < 0:
        raise ValueError(f"train.pretrain.warmup: must be ≥ 0, got {out['warmup']}")
    return out


def _check_pretrain(c, pc):
    """The pretrain object against the model: Go's Config.checkPretrain."""
    if c["task"] != "classify":
        raise ValueError('train.pretrain: only for task "classify" (an lm already trains on its inputs)')
    if pc["objective"] == "mlm" and c["causal"]:
        raise ValueError('train.pretrain.objective: "mlm" needs a bidirectional model (causal: false); '
                         'a causal model pretrains with "lm"')
    if pc["objective"] == "lm" and not c["causal"]:
        raise ValueError('train.pretrain.objective: "lm" needs a causal model (causal: true); '
                         'a bidirectional model pretrains with "mlm"')
    if pc["objective"] == "mlm":
        if pc["mask_id"] >= c["vocab_size"]:
            raise ValueError(f"train.pretrain.mask_id: must be in [0, vocab_size={c['vocab_size']}), "
                             f"got {pc['mask_id']}")
        if c.get("pad_id") is not None and pc["mask_id"] == c["pad_id"]:
            raise ValueError(f"train.pretrain.mask_id: must differ from pad_id ({c['pad_id']})")


def pretrain_stage(c):
    """The checked config c as its pretraining stage's model sees it (Go's
    Config.PretrainStage): task "lm" (a token-level head, named
    PRETRAIN_HEAD by the Model), and a train object with the stage's steps
    and learning-rate settings and no pretrain object."""
    tc = train(c)
    pc = tc.pop("pretrain")
    tc.pop("curriculum", None)  # the curriculum and freezing are fine-tuning's
    tc.pop("freeze", None)
    s = {k: v for k, v in c.items() if k not in ("n_classes", "pool")}
    s["task"] = "lm"
    s["train"] = dict(tc, steps=pc["steps"], lr=pc["lr"], min_lr=pc["min_lr"], warmup=pc["warmup"])
    return s


def train(cfg):
    """The resolved train settings of cfg (defaults filled in)."""
    t = cfg.get("train") or {}
    if not isinstance(t, dict):
        raise ValueError("train: want an object")
    for k in sorted(set(t) - set(TRAIN_DEFAULTS) - {"pretrain", "curriculum", "freeze"}):
        raise ValueError(f"train.{k}: unknown key")
    out = dict(TRAIN_DEFAULTS)
    for k, v in t.items():
        if k in ("pretrain", "curriculum"):
            continue
        if k == "freeze":
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ValueError(f"train.freeze: want an array of parameter name prefixes, got {v!r}")
            if "" in v:
                raise ValueError("train.freeze: an empty prefix would freeze every parameter")
            out[k] = list(v)
            continue
        if k == "schedule":
            if not isinstance(v, str):
                raise ValueError(f"train.schedule: want a string, got {v!r}")
            if v not in ("cosine", "constant"):
                raise ValueError(f'train.schedule: want "cosine" or "constant", got {v!r}')
            out[k] = v
            continue
        ok = _int(v) if k in TRAIN_INTS else isinstance(v, (int, float)) and not isinstance(v, bool)
        if not ok:
            raise ValueError(f"train.{k}: want {'an integer' if k in TRAIN_INTS else 'a number'}, got {v!r}")
        out[k] = int(v) if k in TRAIN_INTS else float(v)
    if not out["seq_len"]:  # absent or 0: max_len
        out["seq_len"] = cfg["max_len"]
    if out["seq_len"] > cfg["max_len"]:
        raise ValueError(f"train.seq_len: {out['seq_len']} exceeds max_len {cfg['max_len']}")
    checks = [
        ("seed", out["seed"] >= 0, "must be ≥ 0"), ("batch_size", out["batch_size"] >= 1, "must be ≥ 1"),
        ("seq_len", out["seq_len"] >= 1, "must be ≥ 1"), ("steps", out["steps"] >= 1, "must be ≥ 1"),
        ("lr", out["lr"] > 0, "must be > 0"), ("min_lr", 0 <= out["min_lr"] <= out["lr"], "must be in [0, lr]"),
        ("warmup", out["warmup"] >= 0, "must be ≥ 0"), ("weight_decay", out["weight_decay"] >= 0, "must be ≥ 0"),
        ("grad_clip", out["grad_clip"] >= 0, "must be ≥ 0 (0 disables clipping)"),
        ("beta1", 0 <= out["beta1"] < 1, "must be in [0, 1)"), ("beta2", 0 <= out["beta2"] < 1, "must be in [0, 1)"),
        ("eps", out["eps"] > 0, "must be > 0"), ("log_every", out["log_every"] >= 1, "must be ≥ 1"),
        ("eval_every", out["eval_every"] >= 0, "must be ≥ 0"), ("eval_batches", out["eval_batches"] >= 1, "must be ≥ 1"),
        ("checkpoint_every", out["checkpoint_every"] >= 0, "must be ≥ 0"),
        ("keep_checkpoints", out["keep_checkpoints"] >= 1, "must be ≥ 1"),
        ("label_smoothing", 0 <= out["label_smoothing"] < 1, f"must be in [0, 1), got {out['label_smoothing']}"),
        ("min_lr", out["schedule"] == "cosine" or out["min_lr"] == 0,
         "the constant schedule has no decay: leave min_lr out (or 0)")]
    for k, ok, msg in checks:
        if not ok:
            raise ValueError(f"train.{k}: {msg}")
    if "curriculum" in t:
        out["curriculum"] = curriculum(t["curriculum"], out)
    if "pretrain" in t:
        out["pretrain"] = pretrain(t, out)
    return out


CURRICULUM_KEYS = ("len", "steps", "batch_size")


def curriculum(cs, tc):
    """The resolved train.curriculum list of the resolved train settings tc
    (Go's parseCurriculum and checkCurriculum): stages of len, steps and
    batch_size (default train.batch_size)."""
    if not isinstance(cs, list):
        raise ValueError(f'train.curriculum: want an array of {{"len", "steps", "batch_size"}} objects, '
                         f'got {json.dumps(cs)[:40]}')
    if not cs:
        raise ValueError("train.curriculum: empty (leave it out for none)")
    out, prev = [], 0
    for i, st in enumerate(cs):
        k = f"train.curriculum[{i}]."
        if not isinstance(st, dict):
            raise ValueError(f"{k[:-1]}: want a JSON object, got {json.dumps(st)[:40]}")
        for u in sorted(set(st) - set(CURRICULUM_KEYS)):
            raise ValueError(f"{k}{u}: unknown key (want len, steps and batch_size)")
        for r in ("len", "steps"):
            if r not in st:
                raise ValueError(f"{k}{r}: required")
        for r in CURRICULUM_KEYS:
            if r in st and not _int(st[r]):
                raise ValueError(f"{k}{r}: want an integer, got {json.dumps(st[r])}")
        s = {"len": int(st["len"]), "steps": int(st["steps"]),
             "batch_size": int(st.get("batch_size", tc["batch_size"]))}
        if s["len"] < 1:
            raise ValueError(f"{k}len: must be ≥ 1, got {s['len']}")
        if s["len"] <= prev:
            raise ValueError(f"{k}len: must exceed the previous stage's len ({prev}), got {s['len']}")
        if s["steps"] < 1:
            raise ValueError(f"{k}steps: must be ≥ 1, got {s['steps']}")
        if s["batch_size"] < 1:
            raise ValueError(f"{k}batch_size: must be ≥ 1, got {s['batch_size']}")
        prev = s["len"]
        out.append(s)
    n = sum(s["steps"] for s in out)
    if n >= tc["steps"]:
        raise ValueError(f"train.curriculum: its stages take {n} updates, train.steps is {tc['steps']}: train.steps "
                         "counts the curriculum's updates and must leave at least one at the training length")
    if prev >= tc["seq_len"]:
        raise ValueError(f"train.curriculum[{len(out) - 1}].len: {prev} is not below the training length "
                         f"{tc['seq_len']} (train.seq_len, default max_len)")
    return out


def load(path):
    """Reads and checks the config JSON at path; errors name the file."""
    try:
        with open(path) as f:
            cfg = json.load(f)
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror or e}") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON: {e}") from None
    try:
        check(cfg)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return cfg
