"""The data `tokenmix train` reads (docs/model.md, "Data formats"), drawn in
the order `tokenmix train` draws it:

- lm: a text file, or every regular file under a directory (sorted by path,
  each followed by "\\n"); the last val_frac of the bytes is held out.
  TextSource draws B uniform windows of T+1 bytes per batch with Go's PCG
  (math/rand/v2, seeded (seed, 0x7465787462617463)), and its state is the
  state.json "data" field that Go writes, {"pcg": base64 of "pcg:" hi lo}.
  Validation is eval_batches batches drawn from (seed, 0x76616c), the same
  windows at every evaluation.
- classify: JSONL lines {"text"|"tokens": …, "label": …}; class indices
  are the sorted label names (numerically when every name is an integer);
  without a validation file the last val_frac of the lines (at least one)
  is held out after a shuffle drawn from (seed, 0x6a736f6e6c). TaskSource
  walks one shuffled permutation per epoch (seed, epoch + 0x9e3779b97f4a7c15)
  in batches padded to their longest input; validation is the first
  eval_batches batches of the held-out lines, in order.

GoRand is Go's PCG-DXSM generator with Rand.IntN and Rand.Shuffle, bit for
bit, so a batch here is the batch `tokenmix train` draws at the same step.
Every error is a ValueError naming the file (and line).
"""
import base64
import json
import os
import re
import struct

import torch

M64 = (1 << 64) - 1
MUL_HI, MUL_LO = 2549297995355413924, 4865540595714422341
INC_HI, INC_LO = 6364136223846793005, 1442695040888963407
TEXT_STREAM, VAL_STREAM, JSONL_STREAM, EPOCH_STREAM = 0x7465787462617463, 0x76616C, 0x6A736F6E6C, 0x9E3779B97F4A7C15
INT = re.compile(r"[+-]?[0-9]+\Z")


class GoRand:
    """Go's rand.New(rand.NewPCG(seed1, seed2)): IntN and Shuffle."""

    def __init__(self, seed1, seed2):
        self.hi, self.lo = seed1 & M64, seed2 & M64

    def uint64(self):
        mul, inc = MUL_HI << 64 | MUL_LO, INC_HI << 64 | INC_LO
        s = ((self.hi << 64 | self.lo) * mul + inc) & ((1 << 128) - 1)
        self.hi, self.lo = s >> 64, s & M64
        h = self.hi
        h ^= h >> 32
        h = (h * 0xDA942042E4DD58B5) & M64
        h ^= h >> 48
        return (h * (self.lo | 1)) & M64

    def uint64n(self, n):
        if n & (n - 1) == 0:
            return self.uint64() & (n - 1)
        p = self.uint64() * n
        if p & M64 < n:
            thresh = (-n & M64) % n
            while p & M64 < thresh:
                p = self.uint64() * n
        return p >> 64

    def intn(self, n):
        if n <= 0:
            raise ValueError("intn: n must be > 0")
        return self.uint64n(n)

    def shuffle(self, xs):
        for i in range(len(xs) - 1, 0, -1):
            j = self.uint64n(i + 1)
            xs[i], xs[j] = xs[j], xs[i]

    def state(self):
        """Go's PCG.MarshalBinary: "pcg:" and the state, big-endian."""
        return b"pcg:" + struct.pack(">QQ", self.hi, self.lo)

    def restore(self, b):
        if len(b) != 20 or b[:4] != b"pcg:":
            raise ValueError("not a PCG state")
        self.hi, self.lo = struct.unpack(">QQ", b[4:])


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror or e}") from None


def load_text(path, val_frac, min_len):
    """(train, val) bytes of the text file or directory at path."""
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file or directory")
    if os.path.isdir(path):
        files = []
        for d, dirs, names in os.walk(path):
            files += [os.path.join(d, n) for n in names if os.path.isfile(os.path.join(d, n))
                      and not os.path.islink(os.path.join(d, n))]
        data = b"".join(_read(f) + b"\n" for f in sorted(files, key=os.fsencode))
    else:
        data = _read(path)
    if not 0 < val_frac < 1:
        raise ValueError(f"--val-frac: {val_frac} not in (0, 1)")
    nv = int(len(data) * val_frac)
    train, val = data[:len(data) - nv], data[len(data) - nv:]
    if len(train) <= min_len or len(val) <= min_len:
        raise ValueError(f"{path}: {len(data)} bytes is too little for windows of {min_len + 1} bytes in both splits")
    return train, val


def text_batch(text, B, T, rng, rows=None):
    """B windows drawn by rng (all B draws are made): tokens [b, T] and
    targets [b, T] of rows (a range of the B; default all). text is bytes,
    or a tokenizer's ids as a LongTensor."""
    starts = [rng.intn(len(text) - T) for _ in range(B)]
    rows = range(B) if rows is None else rows
    if isinstance(text, torch.Tensor):
        w = torch.stack([text[starts[i]:starts[i] + T + 1] for i in rows]) if len(rows) else \
            torch.zeros(0, T + 1, dtype=torch.long)
        return w[:, :-1], w[:, 1:]
    buf = torch.frombuffer(bytearray(b"".join(text[starts[i]:starts[i] + T + 1] for i in rows)), dtype=torch.uint8)
    w = buf.long().reshape(len(rows), T + 1)
    return w[:, :-1], w[:, 1:]


class TextSource:
    """The lm training batches: B windows of T+1 bytes per step."""

    def __init__(self, text, B, T, seed):
        self.text, self.B, self.T = text, B, T
        self.rng = GoRand(seed, TEXT_STREAM)

    def next(self, rows=None):
        """The next batch: (tokens, targets) of rows, and the batch's number of targets."""
        tok, tgt = text_batch(self.text, self.B, self.T, self.rng, rows)
        return tok, tgt, self.B * self.T

    def state(self):
        return {"pcg": base64.b64encode(self.rng.state()).decode()}

    def restore(self, step, state):
        try:
            self.rng.restore(base64.b64decode(state["pcg"], validate=True))
        except (TypeError, KeyError, ValueError):
            raise ValueError(f"state.json: data: {json.dumps(state)[:60]} is not a text source's position") from None


class Curriculum:
    """Go's train.Curriculum over a TextSource: the run's first updates
    after base (train.pretrain.steps) take the stages' windows, stage by
    stage, drawn from the source's one random stream; then its own."""

    def __init__(self, src, stages, base=0):
        self.src, self.stages, self.base, self.k = src, stages, base, 0

    def shape(self, step=None):
        """The (B, T) of run step step (default: the next batch's)."""
        i = (self.k if step is None else step) - self.base
        for s in self.stages if i >= 0 else ():
            if i < s["steps"]:
                return s["batch_size"], s["len"]
            i -= s["steps"]
        return self.src.B, self.src.T

    def next(self, rows=None):
        B, T = self.shape()
        self.k += 1
        tok, tgt = text_batch(self.src.text, B, T, self.src.rng, rows)
        return tok, tgt, B * T

    def state(self):
        return self.src.state()

    def restore(self, step, state):
        self.k = step
        self.src.restore(step, state)


def val_rng(seed):
    """The generator of the lm validation windows (text_batch eval_batches times)."""
    return GoRand(seed, VAL_STREAM)


# Classification.

def read_records(path, want_label=True):
    """The JSONL records of path: [(tokens, is_text, label, where)]."""
    raw = _read(path)
    out = []
    for n, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            out.append(_record(line, want_label) + (where,))
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    if not out:
        raise ValueError(f"{path}: no input lines")
    return out


def _clip(v):
    s = json.dumps(v, ensure_ascii=False)
    return s if len(s) <= 40 else s[:37] + "..."


def _record(line, want_label):
    try:
        m = json.loads(line.decode("utf-8", "replace"))
    except json.JSONDecodeError as e:
        raise ValueError(f"not a JSON object: {e}") from None
    if not isinstance(m, dict):
        raise ValueError(f"not a JSON object: {_clip(m)}")
    if "text" in m and "tokens" in m:
        raise ValueError('both "text" and "tokens": want one of them')
    if "text" in m:
        if not isinstance(m["text"], str):
            raise ValueError(f'"text": want a string, got {_clip(m["text"])}')
        tokens, text = list(m["text"].encode()), True
    elif "tokens" in m:
        t = m["tokens"]
        if not isinstance(t, list) or not all(isinstance(v, int) and not isinstance(v, bool)
                                              and -(1 << 31) <= v < 1 << 31 for v in t):
            raise ValueError(f'"tokens": want an array of integers, got {_clip(t)}')
        tokens, text = t, False
    else:
        raise ValueError('want "text" (a string) or "tokens" (an array of integers)')
    if not tokens:
        raise ValueError("empty input")
    label = None
    if "label" in m:
        v = m["label"]
        if isinstance(v, str):
            label = v
        elif isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < 1 << 63:
            label = str(v)
        else:
            raise ValueError(f'"label": want a string or an integer, got {_clip(v)}')
        if label == "":
            raise ValueError('"label" is empty')
    elif want_label:
        raise ValueError('no "label"')
    return tokens, text, label


def label_names(recs):
    """The distinct labels, sorted (numerically when all are integers)."""
    names = sorted({r[2] for r in recs})
    if all(INT.match(n) and -(1 << 63) <= int(n) < 1 << 63 for n in names):
        names.sort(key=int)
    return names


class Labeled:
    """A classification task: train and val lists of (tokens, class)."""

    def __init__(self, cfg, train, val, names, val_frac, seed):
        if val is None:
            train = list(train)
            GoRand(seed, JSONL_STREAM).shuffle(train)
            n = max(1, int(val_frac * len(train) + 0.5))
            if n >= len(train):
                raise ValueError(f"data: {len(train)} labelled lines are too few to hold out {n} for validation")
            train, val = train[:len(train) - n], train[len(train) - n:]
        pad, index = cfg.get("pad_id"), {n: i for i, n in enumerate(names)}
        self.pad, self.split, lens = pad, [], []
        for recs in (train, val):
            rows = []
            for tokens, text, label, where in recs:
                if len(tokens) > cfg["max_len"]:
                    raise ValueError(f"{where}: {len(tokens)} tokens, longer than max_len {cfg['max_len']}")
                bad = [v for v in tokens if not 0 <= v < cfg["vocab_size"]]
                if bad:
                    raise ValueError(f"{where}: token {bad[0]} outside the vocabulary [0, {cfg['vocab_size']})")
                if text and pad is not None and pad < 256:
                    raise ValueError(f"{where}: text input needs a pad_id outside the byte range 0–255 (so "
                                     f"vocab_size ≥ 257); the config's pad_id is {pad}")
                if label not in index:
                    raise ValueError(f"{where}: label {label!r} is not one of the training labels ({', '.join(names)})")
                rows.append((tokens, index[label]))
                lens.append(len(tokens))
            self.split.append(rows)
        if min(lens) != max(lens) and pad is None:
            raise ValueError(f"data: inputs have {min(lens)} to {max(lens)} tokens: different lengths need a pad_id "
                             "in the config (outside 0–255 for text, so vocab_size ≥ 257)")
        self.train, self.val = self.split

    def batch(self, rows, idx):
        """tokens [len(idx), T] padded to the longest of rows[idx] and targets [len(idx)]."""
        T = max(len(rows[i][0]) for i in idx)
        tok = torch.full((len(idx), T), self.pad or 0, dtype=torch.long)
        for r, i in enumerate(idx):
            tok[r, :len(rows[i][0])] = torch.tensor(rows[i][0])
        return tok, torch.tensor([rows[i][1] for i in idx])


class TaskSource:
    """The classify training batches: one shuffled permutation per epoch,
    B lines per batch (across epochs), padded to the batch's longest line;
    the position is the step alone (state.json "data" is null)."""

    def __init__(self, task, B, seed):
        self.task, self.B, self.seed, self.k = task, B, seed, 0
        self.perms = {}

    def perm(self, e):
        if e not in self.perms:
            p = list(range(len(self.task.train)))
            GoRand(self.seed, e + EPOCH_STREAM).shuffle(p)
            self.perms = {e: p}
        return self.perms[e]

    def next(self, rows=None):
        n, p = len(self.task.train), self.k * self.B
        idx = [self.perm((p + j) // n)[(p + j) % n] for j in range(self.B)]
        self.k += 1
        tok, tgt = self.task.batch(self.task.train, idx)
        rows = range(self.B) if rows is None else rows
        return tok[rows.start:rows.stop], tgt[rows.start:rows.stop], self.B

    def state(self):
        return None

    def restore(self, step, state):
        self.k = step
