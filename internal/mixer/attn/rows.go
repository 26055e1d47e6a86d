package attn

import "github.com/tokenmix/tokenmix/internal/kernels"

// Row helpers on short slices (one tile row or one head row); the float32
// instantiations are the vectorised kernels.

func dot[F kernels.Float](a, b []F) F { return kernels.Dot(a, b) }

// rowMax returns max(x), −Inf for an empty or all −Inf row.
func rowMax[F kernels.Float](x []F) F { return kernels.Max(x) }

// expSub sets x[i] = exp(x[i] − m) and returns Σ x. −Inf entries become 0;
// m = +Inf makes every finite entry 0.
func expSub[F kernels.Float](x []F, m F) F { return kernels.ExpSub(x, x, m) }
