package attn

import (
	"math"

	"tokenmix/kernels"
)

// Row helpers on short slices (one tile row or one head row).

func dot[F kernels.Float](a, b []F) F {
	b = b[:len(a)]
	var s0, s1, s2, s3 F
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// rowMax returns max(x), −Inf for an empty or all −Inf row.
func rowMax[F kernels.Float](x []F) F {
	m := F(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

// expSub sets x[i] = exp(x[i] − m) and returns Σ x. −Inf entries become 0;
// m = +Inf makes every finite entry 0.
func expSub[F kernels.Float](x []F, m F) F {
	for i := range x {
		x[i] -= m
	}
	kernels.Exp(x, x)
	var s F
	for _, v := range x {
		s += v
	}
	return s
}
