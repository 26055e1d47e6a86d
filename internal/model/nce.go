package model

import "math"

// infoNCE is an embedder's in-batch contrastive loss (van den Oord et al.
// 2018; as in SimCSE, Gao et al. 2021). The head's rows z_i [D] are
// L2-normalised, e_i = z_i/‖z_i‖; an anchor row i (target t_i ≥ 0, the row
// of its positive) scores every other row j ≠ i by s_ij = e_i·e_j/τ, and
// its loss is −log softmax_j(s_i)[t_i]: the positive against the batch's
// other rows (other anchors, positives and negatives). The loss is the
// mean over anchors. Backward:
//
//	∂L/∂s_ij = (p_ij − [j = t_i]) / anchors
//	∂L/∂e_i += Σ_j ∂L/∂s_ij · e_j/τ,  ∂L/∂e_j += ∂L/∂s_ij · e_i/τ
//	∂L/∂z_r = (∂L/∂e_r − e_r (e_r·∂L/∂e_r)) / ‖z_r‖
//
// It computes in float64 (a batch has few rows) and keeps e, ‖z‖ and p
// for backward.
type infoNCE struct {
	e, norm, p []float64
}

func (l *infoNCE) forward(z any, targets []int32, N, D int, tau float64) (float64, int) {
	zs := toF64(z)
	l.e, l.norm, l.p = grow64(l.e, N*D), grow64(l.norm, N), grow64(l.p, N*N)
	for i := range N {
		var s float64
		for _, v := range zs[i*D : (i+1)*D] {
			s += v * v
		}
		n := math.Sqrt(s) + 1e-12
		l.norm[i] = n
		for k := range D {
			l.e[i*D+k] = zs[i*D+k] / n
		}
	}
	var loss float64
	count := 0
	for i := range N {
		t := int(targets[i])
		if t < 0 {
			continue
		}
		row := l.p[i*N : (i+1)*N]
		mx := math.Inf(-1)
		for j := range N {
			if j == i {
				continue
			}
			var d float64
			for k := range D {
				d += l.e[i*D+k] * l.e[j*D+k]
			}
			row[j] = d / tau
			mx = max(mx, row[j])
		}
		var sum float64
		for j := range N {
			if j != i {
				row[j] = math.Exp(row[j] - mx)
				sum += row[j]
			}
		}
		for j := range N {
			if j == i {
				row[j] = 0
			} else {
				row[j] /= sum
			}
		}
		loss -= math.Log(row[t])
		count++
	}
	if count == 0 {
		return 0, 0
	}
	return loss / float64(count), count
}

func (l *infoNCE) backward(dz any, z any, targets []int32, N, D int, tau, scale float64) {
	de := make([]float64, N*D)
	for i := range N {
		t := int(targets[i])
		if t < 0 {
			continue
		}
		for j := range N {
			if j == i {
				continue
			}
			g := l.p[i*N+j]
			if j == t {
				g--
			}
			g *= scale / tau
			for k := range D {
				de[i*D+k] += g * l.e[j*D+k]
				de[j*D+k] += g * l.e[i*D+k]
			}
		}
	}
	out := make([]float64, N*D)
	for r := range N {
		var dot float64
		for k := range D {
			dot += l.e[r*D+k] * de[r*D+k]
		}
		for k := range D {
			out[r*D+k] = (de[r*D+k] - l.e[r*D+k]*dot) / l.norm[r]
		}
	}
	fromF64(dz, out)
}

func grow64(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// toF64 is a float32 or float64 slice as float64.
func toF64(v any) []float64 {
	switch x := v.(type) {
	case []float64:
		return x
	case []float32:
		out := make([]float64, len(x))
		for i, f := range x {
			out[i] = float64(f)
		}
		return out
	}
	panic("model: infoNCE on a slice that is not float32 or float64")
}

// fromF64 writes src into dst, a float32 or float64 slice.
func fromF64(dst any, src []float64) {
	switch x := dst.(type) {
	case []float64:
		copy(x, src)
	case []float32:
		for i, f := range src {
			x[i] = float32(f)
		}
	default:
		panic("model: infoNCE on a slice that is not float32 or float64")
	}
}
