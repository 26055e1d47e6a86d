"""FNet ("fnet"; Lee-Thorp et al. 2021): out = Re(FFT_time(FFT_channels(x))),
the unnormalised 2-D DFT over (T, d), real part, by torch.fft. No
parameters; padding positions are mixed like any token; no causal form.
Option method ("auto", "fft", "gemm") picks tokenmix's kernel and changes
nothing here."""
import torch
import torch.nn as nn

from .options import Options


class FNet(nn.Module):
    def __init__(self, mc):
        super().__init__()
        o = Options(mc.kind, mc.opts)
        method = o.str("method", "auto")
        o.done()
        if method not in ("auto", "fft", "gemm"):
            raise ValueError(f"mixer.method: want auto, fft or gemm, got {method!r}")
        if mc.causal:
            raise ValueError("mixer.kind: fnet has no causal form")

    def forward(self, x, pad, seed):
        dt = x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float32
        return torch.fft.fft2(x.to(dt), dim=(-2, -1)).real.to(x.dtype)
