"""A small safetensors reader and writer on torch (no `safetensors` package).

Format: an 8-byte little-endian header length N, N bytes of JSON
{name: {"dtype", "shape", "data_offsets": [lo, hi]}, "__metadata__": {str: str}},
then the little-endian tensor bytes. The reader checks what tokenmix's Go
reader checks: the header fits the file, every dtype is known, each tensor's
byte span matches its shape, and the tensors cover the data section with no
gap, overlap or trailing byte. Every problem is a ValueError naming the file.
"""
import json
import os
import struct
import sys

import torch

DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}
NAMES = {v: k for k, v in DTYPES.items()}
MAX_HEADER = 100 << 20


def load(path):
    """Returns ({name: tensor}, metadata) for the safetensors file at path."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            b = f.read()
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror or e}") from e
    return parse(b, path)


def parse(b, path="<bytes>"):
    """Parses safetensors bytes; path only names the source in errors."""
    def bad(msg):
        return ValueError(f"{path}: safetensors: {msg}")

    if len(b) < 8:
        raise bad(f"file of {len(b)} bytes is too short for a header")
    (n,) = struct.unpack("<Q", b[:8])
    if n > len(b) - 8 or n > MAX_HEADER:
        raise bad(f"header length {n} runs past the end of the file ({len(b)} bytes)")
    try:
        hdr = json.loads(b[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise bad(f"header is not JSON: {e}") from None
    if not isinstance(hdr, dict):
        raise bad("header is not a JSON object")
    meta = hdr.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise bad("__metadata__ must map strings to strings")
    data = memoryview(b)[8 + n:]
    out, spans = {}, []
    for name, e in hdr.items():
        if not isinstance(e, dict) or set(e) - {"dtype", "shape", "data_offsets"}:
            raise bad(f"tensor {name!r}: malformed entry")
        dt = DTYPES.get(e.get("dtype"))
        if dt is None:
            raise bad(f"tensor {name!r}: unsupported dtype {e.get('dtype')!r}")
        shape, offs = e.get("shape"), e.get("data_offsets")
        if (not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape)
                or not isinstance(offs, list) or len(offs) != 2 or not all(isinstance(o, int) for o in offs)):
            raise bad(f"tensor {name!r}: bad shape or data_offsets")
        lo, hi = offs
        count = 1
        for s in shape:
            count *= s
        size = count * torch.tensor([], dtype=dt).element_size()
        if not (0 <= lo <= hi <= len(data)) or hi - lo != size:
            raise bad(f"tensor {name!r}: data_offsets {lo},{hi} do not hold {shape} of {e['dtype']}")
        raw = bytearray(data[lo:hi])
        t = torch.frombuffer(raw, dtype=dt) if raw else torch.empty(0, dtype=dt)
        if sys.byteorder != "little" and t.element_size() > 1:
            t = t.view(torch.uint8).view(-1, t.element_size()).flip(1).reshape(-1).view(dt)
        out[name] = t.reshape(shape)
        spans.append((lo, hi, name))
    at = 0
    for lo, hi, name in sorted(spans):
        if lo < at:
            raise bad(f"tensor {name!r} overlaps the previous tensor")
        if lo > at:
            raise bad(f"gap in the data section before tensor {name!r}")
        at = hi
    if at != len(data):
        raise bad(f"{len(data) - at} trailing bytes after the last tensor")
    return out, {str(k): v for k, v in meta.items()}


def dumps(tensors, metadata=None):
    """The safetensors bytes of {name: tensor} (sorted by name)."""
    hdr = {}
    if metadata:
        hdr["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, off = [], 0
    for name in sorted(tensors):
        t = tensors[name]
        if not isinstance(t, torch.Tensor):
            t = torch.as_tensor(t)
        t = t.detach().cpu().contiguous()
        dt = NAMES.get(t.dtype)
        if dt is None:
            raise ValueError(f"tensor {name!r}: unsupported dtype {t.dtype}")
        raw = t.reshape(-1).view(torch.uint8) if t.numel() and t.dtype != torch.bool else t.reshape(-1).to(torch.uint8)
        if sys.byteorder != "little" and t.element_size() > 1:
            raw = raw.view(-1, t.element_size()).flip(1).reshape(-1)
        raw = bytes(raw.numpy().tobytes()) if raw.numel() else b""
        hdr[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return b"".join([struct.pack("<Q", len(h)), h] + blobs)


def save(path, tensors, metadata=None):
    """Writes {name: tensor} to path atomically: into path + ".tmp", fsynced,
    then renamed over path."""
    write_atomic(os.fspath(path), dumps(tensors, metadata))


def write_atomic(path, data):
    """Writes data to a temporary file beside path, fsyncs it and renames it
    to path, then fsyncs the directory."""
    tmp = path + ".tmp"
    write_sync(tmp, data)
    os.replace(tmp, path)
    sync_dir(os.path.dirname(path) or ".")


def write_sync(path, data):
    """Writes data to path and fsyncs it."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def sync_dir(path):
    """fsyncs a directory so the names created or renamed in it last."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
