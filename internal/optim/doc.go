// Package optim holds tokenmix's optimiser: AdamW with decoupled weight decay
// (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019)
// over one flat parameter slab split into decay and no-decay groups, a linear
// warmup then cosine decay (or constant) learning-rate schedule, and global
// gradient-norm clipping.
//
// For the update with 0-based index s (step = s+1 for bias correction):
//
//	lr(s) = LR·(s+1)/W                                  if s < W (warmup)
//	lr(s) = MinLR + ½(LR−MinLR)(1+cos(π·(s−W)/(S−W)))   otherwise, s < S
//	lr(s) = LR                                          otherwise, constant
//	g    ← g·min(1, clip/(‖g‖₂+1e-6))                   when clip > 0
//	m    ← β1·m + (1−β1)·g;   v ← β2·v + (1−β2)·g²
//	p    ← p − lr·( m̂/(√v̂ + ε) + wd·p ),   m̂ = m/(1−β1^step), v̂ = v/(1−β2^step)
//
// with wd = 0 for no-decay groups. This is exactly PyTorch's
// torch.optim.AdamW with torch.nn.utils.clip_grad_norm_.
package optim
