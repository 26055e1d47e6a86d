package attn

import "github.com/tokenmix/tokenmix/internal/kernels"

// dot is the row helper on one head row; the float32 instantiation is the
// vectorised kernel. (Score tiles' rows go through kernels' tile-row
// helpers: OnlineSoftmax, ExpSubRows, SubMulRows.)
func dot[F kernels.Float](a, b []F) F { return kernels.Dot(a, b) }
