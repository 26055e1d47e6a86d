package entmax

import (
	"math"

	"tokenmix/kernels"
)

// Row kernels of α-entmax. A row z has n entries; −Inf entries are
// disallowed keys and get p = 0. With β = α−1 and m = 1/β,
//
//	p_j = [β·z_j − τ]₊^m,  τ such that Σ_j p_j = 1,
//
// and τ lies in [β·max(z) − 1, β·max(z) − n^{−β}] (n allowed entries): at the
// lower end the maximum alone has p = 1, at the upper end the uniform
// distribution's mass is reached.

// Method says how a row's threshold τ is found.
type Method int

const (
	Softmax   Method = iota // α = 1
	Sparsemax               // α = 2: exact, Michelot's iteration
	Entmax15                // α = 1.5: exact, Newton from below + closed form
	Bisect                  // any α > 1: bisection on τ, then renormalise
)

// MethodFor returns the exact method for α ∈ {1, 1.5, 2} and Bisect
// otherwise (always Bisect when α is learned, so that the map α ↦ p is one
// smooth function).
func MethodFor(alpha float64, learned bool) Method {
	switch {
	case learned:
		return Bisect
	case alpha == 1:
		return Softmax
	case alpha == 1.5:
		return Entmax15
	case alpha == 2:
		return Sparsemax
	}
	return Bisect
}

// bisectIters is the number of halvings of the τ bracket (width ≤ 1): enough
// that τ is exact to the precision of F.
func bisectIters[F kernels.Float]() int {
	var z F
	if _, ok := any(z).(float32); ok {
		return 30
	}
	return 60
}

// Row replaces the scores z (−Inf = disallowed) by α-entmax(z) using method
// mt and returns τ and the normaliser c such that p_j = c·[β·z_j − τ]₊^m
// (for Softmax, τ is the log-sum-exp and p_j = exp(z_j − τ)). tmp is
// workspace of at least len(z) elements. A row with no allowed entry
// becomes zeros with τ = +Inf. Row panics if len(tmp) < len(z).
func Row[F kernels.Float](z, tmp []F, alpha float64, mt Method) (tau, c float64) {
	tmp = tmp[:len(z)]
	mx := math.Inf(-1)
	n := 0
	for _, v := range z {
		if fv := float64(v); fv > mx {
			mx = fv
		}
		if !math.IsInf(float64(v), -1) {
			n++
		}
	}
	if n == 0 {
		clear(z)
		return math.Inf(1), 0
	}
	switch mt {
	case Softmax:
		var s float64
		for _, v := range z {
			s += math.Exp(float64(v) - mx)
		}
		tau, c = mx+math.Log(s), 1
	case Sparsemax:
		tau = sparsemaxTau(z, tmp, mx)
	case Entmax15:
		tau = entmax15Tau(z, tmp, mx)
	default:
		tau = bisectTau(z, tmp, mx, alpha, n)
	}
	if mt != Softmax {
		c = 1
		c = 1 / applyRow(z, z, alpha, mt, tau, c, true)
	}
	applyRow(z, z, alpha, mt, tau, c, false)
	return tau, c
}

// applyRow writes p_j = c·[β·z_j − τ]₊^m (or exp(z_j − τ) for Softmax) into
// dst from z and returns Σ p; with dry it only returns the sum.
func applyRow[F kernels.Float](dst, z []F, alpha float64, mt Method, tau, c float64, dry bool) float64 {
	var s float64
	beta := alpha - 1
	pw := powFunc(1 / beta)
	for j, v := range z {
		fv := float64(v)
		var p float64
		switch mt {
		case Softmax:
			p = math.Exp(fv - tau)
		case Sparsemax:
			p = max(fv-tau, 0)
		case Entmax15:
			u := max(0.5*fv-tau, 0)
			p = u * u
		default:
			if u := beta*fv - tau; u > 0 {
				p = pw(u)
			}
		}
		p *= c
		s += p
		if !dry {
			dst[j] = F(p)
		}
	}
	return s
}

// sparsemaxTau finds the sparsemax threshold by Michelot's iteration:
// starting from the candidates z_j > max−1 (a superset of the support),
// τ_S = (Σ_S z − 1)/|S| never exceeds the true τ, so entries ≤ τ_S leave S
// for good; when S stops shrinking, τ_S is exact. O(n) per pass, a few
// passes, no sort.
func sparsemaxTau[F kernels.Float](z, tmp []F, mx float64) float64 {
	c := tmp[:0]
	for _, v := range z {
		if w := float64(v) - mx; w > -1 {
			c = append(c, F(w))
		}
	}
	tau := -1.0
	for it := 0; it < 2*len(z)+2; it++ {
		var s float64
		for _, w := range c {
			s += float64(w)
		}
		t := (s - 1) / float64(len(c))
		nc := c[:0]
		for _, w := range c {
			if float64(w) > t {
				nc = append(nc, w)
			}
		}
		stable := len(nc) == len(c)
		c, tau = nc, t
		if stable {
			break
		}
	}
	return tau + mx
}

// entmax15Tau finds the exact 1.5-entmax threshold on w = z/2:
// f(τ) = Σ[w_j − τ]₊² − 1 is convex and decreasing, so Newton's method from
// τ₀ = max(w) − 1 (where f ≥ 0) increases monotonically towards the root
// without passing it, and entries ≤ τ leave the candidate set for good. Once
// an iteration drops nothing, the closed form on the candidate set S (the
// root of Σ_S (w_j − τ)² = 1, as in the sort-based algorithm of Peters et
// al. 2019) is checked against S and returned.
func entmax15Tau[F kernels.Float](z, tmp []F, mx float64) float64 {
	wmx := 0.5 * mx
	c := tmp[:0]
	for _, v := range z {
		if w := 0.5*float64(v) - wmx; w > -1 {
			c = append(c, F(w)) // shifted so that max(w) = 0
		}
	}
	tau := -1.0
	for it := 0; it < 100; it++ {
		var s1, s2 float64
		for _, w := range c {
			u := float64(w) - tau
			s1 += u
			s2 += u * u
		}
		t := tau + (s2-1)/(2*s1)
		nc := c[:0]
		for _, w := range c {
			if float64(w) > t {
				nc = append(nc, w)
			}
		}
		stable := len(nc) == len(c)
		c = nc
		if stable {
			if ex, ok := entmax15Closed(c); ok && ex >= t {
				return ex + wmx
			}
		}
		if t <= tau {
			break // no progress left in this precision
		}
		tau = t
	}
	return tau + wmx
}

// entmax15Closed returns the smaller root τ of Σ_S (w_j − τ)² = 1 and
// whether every w_j of S lies above it.
func entmax15Closed[F kernels.Float](s []F) (float64, bool) {
	rho := float64(len(s))
	var sum float64
	minw := math.Inf(1)
	for _, w := range s {
		sum += float64(w)
		minw = min(minw, float64(w))
	}
	mean := sum / rho
	var ss float64
	for _, w := range s {
		d := float64(w) - mean
		ss += d * d
	}
	delta := (1 - ss) / rho
	if delta < 0 {
		return 0, false
	}
	t := mean - math.Sqrt(delta)
	return t, t < minw
}

// bisectTau finds τ for general α by bisection on the bracket
// [β·max−1, β·max−n^{−β}] (Peters et al. 2019; safe in float32: the scaled
// scores within 1 of the maximum are the only candidates), dropping
// candidates that fall below the lower end. Once every remaining candidate
// lies above the upper end, the support is known and f(τ) = Σ_S (w−τ)^m − 1
// is smooth and convex on the bracket (for α ≤ 2), so Newton's method from
// the lower end finishes the job in a few steps without leaving it. The
// result is never above the exact τ, so the support is a superset of the
// exact one and Σp ≥ 1 before renormalisation.
func bisectTau[F kernels.Float](z, tmp []F, mx, alpha float64, n int) float64 {
	beta := alpha - 1
	m := 1 / beta
	bmx := beta * mx
	lo, hi := -1.0, -math.Pow(float64(n), -beta) // relative to β·max
	c := tmp[:0]
	for _, v := range z {
		if w := beta*float64(v) - bmx; w > lo {
			c = append(c, F(w))
		}
	}
	pw := powFunc(m)
	for it := bisectIters[F](); it > 0 && hi > lo; it-- {
		mid := 0.5 * (lo + hi)
		var f float64
		minw := math.Inf(1)
		for _, w := range c {
			fw := float64(w)
			minw = min(minw, fw)
			if u := fw - mid; u > 0 {
				f += pw(u)
			}
		}
		if f >= 1 {
			lo = mid
			nc := c[:0]
			minw = math.Inf(1)
			for _, w := range c {
				if fw := float64(w); fw > lo {
					nc = append(nc, w)
					minw = min(minw, fw)
				}
			}
			c = nc
		} else {
			hi = mid
		}
		if minw > hi && m >= 1 {
			return newtonTau(c, lo, hi, m, pw) + bmx
		}
	}
	return lo + bmx
}

// newtonTau solves Σ_S (w−τ)^m = 1 for τ in [lo, hi] by Newton's method from
// lo, when every w of S exceeds hi and m ≥ 1 (f convex and decreasing: the
// iterates increase towards the root and never pass it).
func newtonTau[F kernels.Float](s []F, lo, hi, m float64, pw func(float64) float64) float64 {
	tau := lo
	for it := 0; it < 50; it++ {
		var f, df float64
		for _, w := range s {
			u := float64(w) - tau
			pu := pw(u)
			f += pu
			df += pu / u
		}
		step := (f - 1) / (m * df)
		t := tau + step
		if !(t > tau) || t > hi {
			break // converged to rounding, or rounding pushed past the bracket
		}
		tau = t
		if step <= 1e-15*(1+math.Abs(tau)) {
			break
		}
	}
	return tau
}

// powFunc returns u ↦ u^m for u > 0, with exact fast cases m = 1 and 2.
func powFunc(m float64) func(float64) float64 {
	switch m {
	case 1:
		return func(u float64) float64 { return u }
	case 2:
		return func(u float64) float64 { return u * u }
	}
	return func(u float64) float64 { return math.Exp(m * math.Log(u)) }
}

// RowBackward replaces dp (∂L/∂p over entries that include the support of
// the row p) by ∂L/∂z, using g_j = p_j^{2−α} on the support and 0 elsewhere:
//
//	dz = g ⊙ dp − g·(Σ_j g_j dp_j)/Σ_j g_j.
//
// With learned it also returns ∂L/∂α of the row (see the package doc):
//
//	∂p_j/∂α = (p_j − p̃_j)/β² − (p_j log p_j − p̃_j·Σ_k p_k log p_k)/β,
//	p̃ = g/Σg.
//
// RowBackward panics if len(p) < len(dp).
func RowBackward[F kernels.Float](dp, p []F, alpha float64, mt Method, learned bool) float64 {
	p = p[:len(dp)]
	ex := 2 - alpha
	var G, A float64
	gOf := func(pj float64) float64 {
		switch mt {
		case Softmax:
			return pj
		case Sparsemax:
			return 1
		case Entmax15:
			return math.Sqrt(pj)
		}
		return math.Exp(ex * math.Log(pj))
	}
	var P1, P3, S float64
	for j, pv := range p {
		if pv <= 0 {
			continue
		}
		pj, dj := float64(pv), float64(dp[j])
		gj := gOf(pj)
		G += gj
		A += gj * dj
		if learned {
			l := pj * math.Log(pj)
			P1 += dj * pj
			P3 += dj * l
			S += l
		}
	}
	if G == 0 {
		clear(dp)
		return 0
	}
	mean := A / G
	for j, pv := range p {
		if pv <= 0 {
			dp[j] = 0
			continue
		}
		dp[j] = F(gOf(float64(pv)) * (float64(dp[j]) - mean))
	}
	if !learned {
		return 0
	}
	beta := alpha - 1
	return (P1-mean)/(beta*beta) - (P3-S*mean)/beta
}
