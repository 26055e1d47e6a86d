"""The counter-based random numbers shared with tokenmix's Go code.

splitmix is SplitMix64's output function (Steele, Lea, Flood 2014) applied
to x + 0x9E3779B97F4A7C15. pass_seed is Go's model.PassSeed: the seed of
block `layer`'s mixer at training step `step`.

LSH rotations (docs/model.md, "LSH rotations") are drawn by lsh_normals:
entry n of the stream (seed, stream) sums the twelve 32-bit halves of the
words w_c = splitmix(key + c), c = 6n … 6n+5, key = splitmix(splitmix(seed)
XOR stream), and returns (S − 6·2^32)/2^32: the Irwin–Hall approximation of
N(0, 1) (mean 0, variance 1, support [−6, 6]) in integer arithmetic, so that
every implementation draws the same float64 bit for bit.

Dropout masks (docs/model.md, "Dropout") are drawn by dropout_keep: branch b
(0 the mixer, 1 the feed-forward) of the block whose pass seed is s keys
key = splitmix(splitmix(s) XOR (2^63 | b)); element j of the branch output
is dropped when the 16-bit lane j mod 4 of splitmix(key + floor(j/4)) is
below round(p·2^16).

The mlm masks of self-pretraining (docs/model.md, "Self-pretraining") are
drawn by mask_positions: update step of a run with seed s keys
key = splitmix(splitmix(splitmix(s) + step) XOR 2^62); position j of the
[B, T] batch (row-major) is masked when it is not padding and the 16-bit
lane j mod 4 of splitmix(key + floor(j/4)) is below round(rate·2^16); when
that masks none, the non-pad position number splitmix(key) mod n of the n
in order is.
"""
import math

import numpy as np

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
C1, C2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def splitmix(x):
    """SplitMix64 of the Python int x (mod 2^64)."""
    x = (x + GOLDEN) & M64
    x = ((x ^ (x >> 30)) * C1) & M64
    x = ((x ^ (x >> 27)) * C2) & M64
    return x ^ (x >> 31)


def splitmix_np(x):
    """splitmix on a numpy uint64 array (wrapping arithmetic)."""
    x = x + np.uint64(GOLDEN)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(C1)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(C2)
    return x ^ (x >> np.uint64(31))


def pass_seed(seed, step, layer):
    """Go's model.PassSeed(seed, step, layer)."""
    return splitmix((splitmix((splitmix(seed & M64) + step) & M64) + layer) & M64)


def lsh_stream(layer, r, h):
    """The stream of LSH round r, head h of block layer."""
    return (layer << 40 | r << 24 | h) & M64


def lsh_normals(seed, stream, n):
    """The first n draws of stream (seed, stream) as a float64 numpy array."""
    key = splitmix(splitmix(seed & M64) ^ stream)
    c = np.arange(6 * n, dtype=np.uint64) + np.uint64(key)
    with np.errstate(over="ignore"):
        w = splitmix_np(c)
    halves = (w & np.uint64(0xFFFFFFFF)) + (w >> np.uint64(32))
    s = halves.reshape(n, 6).sum(axis=1, dtype=np.uint64).astype(np.int64) - (6 << 32)
    return s.astype(np.float64) / 2.0 ** 32


def dropout_key(pass_seed_, branch):
    """The key of a dropout mask: branch 0 (mixer) or 1 (feed-forward) of
    the block whose pass seed is pass_seed_."""
    return splitmix(splitmix(pass_seed_ & M64) ^ (1 << 63 | branch))


def dropout_keep(key, n, p):
    """Which of n elements the mask of key keeps at probability p (a numpy
    bool array)."""
    words = (n + 3) // 4
    with np.errstate(over="ignore"):
        w = splitmix_np(np.arange(words, dtype=np.uint64) + np.uint64(key))
    lanes = np.stack([(w >> np.uint64(16 * k)) & np.uint64(0xFFFF) for k in range(4)], axis=1).reshape(-1)[:n]
    return lanes >= np.uint64(math.floor(p * 65536 + 0.5))


def mask_key(seed, step):
    """The key of the mlm mask of update step (Go's train.MaskKey)."""
    return splitmix(splitmix((splitmix(seed & M64) + step) & M64) ^ (1 << 62))


def mask_positions(key, eligible, rate):
    """Which positions the mlm mask of key masks (a numpy bool array), of
    the positions whose entry of eligible (a numpy bool array: not padding)
    is true."""
    n = len(eligible)
    m = ~dropout_keep(key, n, rate) & eligible
    if not m.any() and eligible.any():
        k = splitmix(key) % int(eligible.sum())
        m[np.flatnonzero(eligible)[k]] = True
    return m
