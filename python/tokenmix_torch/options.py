"""Strict mixer options: each kind reads its keys, and any key left over is
an error naming it, as in tokenmix's Go mixer.Options."""
from dataclasses import dataclass, field


@dataclass
class MixerConfig:
    """What a mixer constructor gets (Go's mixer.Config)."""
    d: int
    heads: int
    max_len: int
    causal: bool
    layer: int
    n_layers: int
    kind: str = ""
    opts: dict = field(default_factory=dict)  # the mixer object minus "kind"


class Options:
    """Reads typed options from a mixer object; done() fails on leftovers."""

    def __init__(self, kind, opts):
        self.kind, self.left = kind, dict(opts)

    def _take(self, key, default, ok, want):
        if key not in self.left:
            return default
        v = self.left.pop(key)
        if not ok(v):
            raise ValueError(f"mixer.{key}: want {want}, got {v!r}")
        return v

    def has(self, key):
        return key in self.left

    def int(self, key, default=None):
        v = self._take(key, default, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
                       and float(v).is_integer(), "an integer")
        return None if v is None else int(v)

    def float(self, key, default=None):
        v = self._take(key, default, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number")
        return None if v is None else float(v)

    def bool(self, key, default=False):
        return self._take(key, default, lambda v: isinstance(v, bool), "true or false")

    def str(self, key, default=None):
        return self._take(key, default, lambda v: isinstance(v, str), "a string")

    def done(self):
        if self.left:
            k = sorted(self.left)[0]
            raise ValueError(f"mixer.{k}: unknown option for kind {self.kind!r}")
