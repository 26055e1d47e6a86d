"""FNet mixer for the PyTorch reference (Lee-Thorp et al. 2021, "FNet:
Mixing Tokens with Fourier Transforms"): out = Re(FFT_time(FFT_channels(x))),
the unnormalised 2-D DFT over (T, d), real part. No parameters; padding
positions are mixed like any token; no causal form.
"""
import torch
import torch.nn as nn


class FNet(nn.Module):
    def __init__(self, mc):
        super().__init__()
        opts = dict(mc.opts)
        method = opts.pop("method", "auto")
        if opts:
            raise ValueError(f"mixer: unknown option(s) {sorted(opts)} for kind 'fnet'")
        if method not in ("auto", "fft", "gemm"):
            raise ValueError(f"mixer.method: want auto, fft or gemm, got {method!r}")
        if mc.causal:
            raise ValueError("mixer.kind: fnet has no causal form")

    def forward(self, x, pad, seed):
        return torch.fft.fft2(x, dim=(-2, -1)).real
