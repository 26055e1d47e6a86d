"""Minimal safetensors reader/writer on numpy (the `safetensors` pip package
is not needed). Format: 8-byte little-endian header length N, N bytes of JSON
header {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}, then
the raw little-endian tensor bytes, laid out contiguously.
"""
import json
import struct

import numpy as np

DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
    "U8": np.uint8, "BOOL": np.bool_,
}
NAMES = {np.dtype(v).str: k for k, v in DTYPES.items()}


def load(path):
    """Returns ({name: numpy array}, metadata dict). Validates offsets."""
    with open(path, "rb") as f:
        b = f.read()
    if len(b) < 8:
        raise ValueError(f"{path}: too short")
    (n,) = struct.unpack("<Q", b[:8])
    if n > len(b) - 8:
        raise ValueError(f"{path}: header length {n} beyond end of file")
    hdr = json.loads(b[8:8 + n])
    data = b[8 + n:]
    meta = hdr.pop("__metadata__", {}) or {}
    out = {}
    spans = []
    for name, e in hdr.items():
        dt = DTYPES.get(e["dtype"])
        if dt is None:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {e['dtype']}")
        lo, hi = e["data_offsets"]
        shape = tuple(e["shape"])
        count = int(np.prod(shape)) if shape else 1
        if not (0 <= lo <= hi <= len(data)) or hi - lo != count * np.dtype(dt).itemsize:
            raise ValueError(f"{path}: tensor {name}: bad data_offsets {lo},{hi}")
        out[name] = np.frombuffer(data[lo:hi], dtype=np.dtype(dt).newbyteorder("<")).reshape(shape).copy()
        spans.append((lo, hi))
    at = 0
    for lo, hi in sorted(spans):
        if lo != at:
            raise ValueError(f"{path}: gap or overlap in the data section")
        at = hi
    if at != len(data):
        raise ValueError(f"{path}: trailing bytes")
    return out, meta


def save(path, tensors, metadata=None):
    """Writes {name: numpy array} (sorted by name, header padded to 8 bytes)."""
    hdr = {}
    if metadata:
        hdr["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    off = 0
    for name in sorted(tensors):
        a = np.array(tensors[name], order="C", copy=False)
        dt = NAMES.get(a.dtype.newbyteorder("<").str)
        if dt is None:
            raise ValueError(f"tensor {name}: unsupported dtype {a.dtype}")
        raw = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        hdr[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for raw in blobs:
            f.write(raw)
