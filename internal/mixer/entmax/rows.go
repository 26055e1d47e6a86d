package entmax

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
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
	Bisect                  // any α > 1: bracketed Newton (α ≤ 2) or bisection on τ, renormalised
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
// mt and returns τ, the normaliser c such that p_j = c·[β·z_j − τ]₊^m (for
// Softmax, τ is the log-sum-exp and p_j = exp(z_j − τ)), and the support
// size. tmp is workspace of at least len(z) elements. A row with no allowed
// entry becomes zeros with τ = +Inf. The exact methods need no
// renormalisation (c = 1); Bisect renormalises. Row panics if
// len(tmp) < len(z).
func Row[F kernels.Float](z, tmp []F, alpha float64, mt Method) (tau, c float64, nsup int) {
	tmp = tmp[:len(z)]
	mx := float64(kernels.Max(z))
	if math.IsInf(mx, -1) {
		clear(z)
		return math.Inf(1), 0, 0
	}
	c = 1
	switch mt {
	case Softmax:
		var s float64
		for _, v := range z {
			s += math.Exp(float64(v) - mx)
		}
		tau = mx + math.Log(s)
	case Sparsemax:
		tau = sparsemaxTau(z, tmp, mx)
	case Entmax15:
		tau = entmax15Tau(z, tmp, mx)
	default:
		n := 0
		for _, v := range z {
			if !math.IsInf(float64(v), -1) {
				n++
			}
		}
		tau = bisectTau(z, tmp, mx, alpha, n)
		// Write the unnormalised powers, then renormalise in place.
		s, ns := applyRow(z, z, alpha, mt, tau, 1, false)
		c = 1 / s
		for j, v := range z {
			z[j] = F(float64(v) * c)
		}
		return tau, c, ns
	}
	_, nsup = applyRow(z, z, alpha, mt, tau, c, false)
	return tau, c, nsup
}

// applyRow writes p_j = c·[β·z_j − τ]₊^m (or exp(z_j − τ) for Softmax) into
// dst from z and returns Σ p and the number of p_j > 0; with dry it only
// returns them.
func applyRow[F kernels.Float](dst, z []F, alpha float64, mt Method, tau, c float64, dry bool) (float64, int) {
	var s float64
	n := 0
	switch mt {
	case Softmax:
		for j, v := range z {
			p := math.Exp(float64(v) - tau)
			s += p
			n += b2i(p > 0)
			if !dry {
				dst[j] = F(p)
			}
		}
	case Sparsemax:
		for j, v := range z {
			p := max(float64(v)-tau, 0)
			s += p
			n += b2i(p > 0)
			if !dry {
				dst[j] = F(p)
			}
		}
	case Entmax15:
		for j, v := range z {
			u := max(0.5*float64(v)-tau, 0)
			p := u * u
			s += p
			n += b2i(p > 0)
			if !dry {
				dst[j] = F(p)
			}
		}
	default:
		beta := alpha - 1
		m := 1 / beta
		for j, v := range z {
			u := max(beta*float64(v)-tau, 0)
			var p float64
			switch {
			case m == 2:
				p = c * u * u
			case u > 0:
				p = c * math.Exp(m*math.Log(u))
			}
			s += p
			n += b2i(p > 0)
			if !dry {
				dst[j] = F(p)
			}
		}
	}
	return s, n
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

// entmax15Tau finds the exact 1.5-entmax threshold on w = z/2. For a
// candidate set S that contains the support, the closed form of the
// sort-based algorithm (Peters, Niculae, Martins 2019), the smaller root
// τ_S of Σ_S (w_j − τ)² = 1, is the exact τ whenever every w_j of S lies
// above it. Otherwise a Newton step on the convex, decreasing
// g(τ) = (Σ[w_j − τ]₊²)^{1/2} − 1 from the current τ (g ≥ 0; τ₀ = max(w) − 1)
// rises towards the root without passing it, and entries ≤ the new τ leave
// S for good. Each iteration is one pass over S that both compacts S and sums
// Σw, Σw² for the next step; near-uniform rows (every candidate in the
// support) finish after the first pass.
func entmax15Tau[F kernels.Float](z, tmp []F, mx float64) float64 {
	wmx := 0.5 * mx
	c := tmp[:len(z)]
	for j, v := range z {
		// Shifted so that max(w) = 0; clamped at −2 (anything ≤ −1 drops
		// out at once) so that −Inf never meets the masked sums.
		c[j] = F(max(0.5*float64(v)-wmx, -2))
	}
	c, sw, sw2, minw := compactSums(c, -1)
	tau := -1.0
	for it := 0; it < 100; it++ {
		rho := float64(len(c))
		mean := sw / rho
		// Closed form on S, with Σ(w−mean)² = Σw² − ρ·mean².
		if delta := (1 - (sw2 - rho*mean*mean)) / rho; delta >= 0 {
			if t := mean - math.Sqrt(delta); t < minw && t >= tau {
				return t + wmx
			}
		}
		// Newton on g(τ) = ‖[w−τ]₊‖₂ − 1 (convex, decreasing, and nearly
		// linear while S is fixed, so it needs about half the steps of
		// Newton on f = (g+1)² − 1), with s1 = Σ(w−τ), s2 = Σ(w−τ)².
		s1 := sw - rho*tau
		s2 := sw2 - 2*tau*sw + rho*tau*tau
		t := tau + (s2-math.Sqrt(s2))/s1
		if !(t > tau) {
			break // converged to rounding
		}
		tau = t
		c, sw, sw2, minw = compactSums(c, tau)
	}
	return tau + wmx
}

// compactSums keeps the entries of c above t, in order, and returns the
// shortened slice with Σw, Σw² and min(0, min w) over it (all w ≤ 0 here).
// It has no data-dependent branch (about half the candidates leave in a
// typical Newton step, which would mispredict) and two accumulators per
// sum; c must hold no infinities.
func compactSums[F kernels.Float](c []F, t float64) (kept []F, sw, sw2, minw float64) {
	n := 0
	var s0, s1, q0, q1, m0, m1 float64
	i := 0
	for ; i+1 < len(c); i += 2 {
		w0, w1 := c[i], c[i+1]
		f0, f1 := float64(w0), float64(w1)
		k0, k1 := 0, 0
		if f0 > t {
			k0 = 1
		}
		if f1 > t {
			k1 = 1
		}
		c[n] = w0
		n += k0
		c[n] = w1
		n += k1
		f0 *= float64(k0)
		f1 *= float64(k1)
		s0 += f0
		s1 += f1
		q0 += f0 * f0
		q1 += f1 * f1
		m0 = min(m0, f0)
		m1 = min(m1, f1)
	}
	if i < len(c) {
		if f := float64(c[i]); f > t {
			c[n] = c[i]
			n++
			s0 += f
			q0 += f * f
			m0 = min(m0, f)
		}
	}
	return c[:n], s0 + s1, q0 + q1, min(m0, m1)
}

// bisectTau finds τ for general α on the bracket [β·max−1, β·max−n^{−β}]
// of the bisection algorithm (Peters et al. 2019; safe in float32: only
// scaled scores within 1 of the maximum are candidates). For α ≤ 2 every
// step is a Newton step on g(τ) = ‖[w−τ]₊‖_m − 1, m = 1/β, from the lower end:
// g is convex and decreasing (an m-norm, m ≥ 1, of the convex [w−τ]₊), so
// the step never passes the root and becomes the new lower end; a step that
// would leave the bracket (rounding) is replaced by a bisection step.
// Candidates below the lower end are dropped for good. It stops when the
// step is below the precision of F, after a few passes instead of the
// 30–50 halvings of plain bisection. For α > 2 (g not convex) it bisects.
// The result is never above the exact τ, so the support is a superset of
// the exact one and Σp ≥ 1 before renormalisation.
func bisectTau[F kernels.Float](z, tmp []F, mx, alpha float64, n int) float64 {
	beta := alpha - 1
	m := 1 / beta
	bmx := beta * mx
	lo, hi := -1.0, -math.Pow(float64(n), -beta) // relative to β·max
	c := tmp[:len(z)]
	for j, v := range z {
		c[j] = F(max(beta*float64(v)-bmx, -2)) // −Inf → −2: dropped below
	}
	c = compact(c, lo)
	tol := 1e-15
	if _, ok := any(z).([]float32); ok {
		tol = 1e-9
	}
	iters := bisectIters[F]()
	if m >= 1 {
		iters = 100 // Newton: a handful in practice
	}
	for it := 0; it < iters && hi > lo; it++ {
		if m >= 1 {
			s0, s1 := sumPow2(c, lo, m)
			r := math.Pow(s0, 1/m) // ‖[w−lo]₊‖_m ≥ 1
			// g = r − 1 and g' = −r·s1/s0.
			step := (r - 1) * s0 / (r * s1)
			if !(step > tol*(1+math.Abs(lo))) {
				break // converged to the precision of F
			}
			if t := lo + step; t < hi {
				lo = t
				c = compact(c, lo)
				continue
			}
			// Rounding pushed the step out of the bracket: bisect once.
		}
		mid := 0.5 * (lo + hi)
		if s0, _ := sumPow2(c, mid, m); s0 >= 1 {
			lo = mid
			c = compact(c, lo)
		} else {
			hi = mid
		}
	}
	return lo + bmx
}

// compact keeps the entries of c above t, in order and without a
// data-dependent branch, and returns the shortened slice.
func compact[F kernels.Float](c []F, t float64) []F {
	n := 0
	for _, w := range c {
		c[n] = w
		n += b2i(float64(w) > t)
	}
	return c[:n]
}

// sumPow2 returns Σ_j u_j^m and Σ_j u_j^{m−1} over u_j = c_j − t > 0, with
// fast cases m = 1 and 2.
func sumPow2[F kernels.Float](c []F, t, m float64) (s0, s1 float64) {
	switch m {
	case 1:
		for _, w := range c {
			u := max(float64(w)-t, 0)
			s0 += u
			s1 += float64(b2i(u > 0))
		}
	case 2:
		for _, w := range c {
			u := max(float64(w)-t, 0)
			s0 += u * u
			s1 += u
		}
	default:
		for _, w := range c {
			if u := float64(w) - t; u > 0 {
				pu := math.Exp(m * math.Log(u))
				s0 += pu
				s1 += pu / u
			}
		}
	}
	return s0, s1
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
	var G, A float64
	switch mt {
	case Softmax: // g = p, Σg = 1
		for j, pv := range p {
			A += float64(pv) * float64(dp[j])
		}
		for j, pv := range p {
			dp[j] = F(float64(pv) * (float64(dp[j]) - A))
		}
	case Sparsemax: // g = 1 on the support
		for j, pv := range p {
			if pv > 0 {
				G++
				A += float64(dp[j])
			}
		}
		mean := A / max(G, 1)
		for j, pv := range p {
			if pv > 0 {
				dp[j] = F(float64(dp[j]) - mean)
			} else {
				dp[j] = 0
			}
		}
	case Entmax15: // g = √p
		for j, pv := range p {
			g := math.Sqrt(float64(pv))
			G += g
			A += g * float64(dp[j])
		}
		mean := A / max(G, math.SmallestNonzeroFloat64)
		for j, pv := range p {
			dp[j] = F(math.Sqrt(float64(pv)) * (float64(dp[j]) - mean))
		}
	default:
		return rowBackwardGeneral(dp, p, alpha, learned, false)
	}
	return 0
}

// rowBackward15 is RowBackward for α = 1.5 that overwrites p with
// g = √p, so that each square root is taken once.
func rowBackward15[F kernels.Float](dp, p []F) {
	p = p[:len(dp)]
	var G0, G1, A0, A1 float64
	j := 0
	for ; j+1 < len(p); j += 2 {
		g0, g1 := math.Sqrt(float64(p[j])), math.Sqrt(float64(p[j+1]))
		p[j], p[j+1] = F(g0), F(g1)
		G0 += g0
		G1 += g1
		A0 += g0 * float64(dp[j])
		A1 += g1 * float64(dp[j+1])
	}
	if j < len(p) {
		g := math.Sqrt(float64(p[j]))
		p[j] = F(g)
		G0 += g
		A0 += g * float64(dp[j])
	}
	G := G0 + G1
	if G == 0 {
		clear(dp)
		return
	}
	mean := F((A0 + A1) / G)
	for j, g := range p {
		dp[j] = g * (dp[j] - mean)
	}
}

// rowBackwardGeneral is RowBackward for any α with g = p^{2−α}, and the
// α gradient when learned. With clobber it overwrites p with g, so that
// each power is taken once.
func rowBackwardGeneral[F kernels.Float](dp, p []F, alpha float64, learned, clobber bool) float64 {
	ex := 2 - alpha
	var G, A, P1, P3, S float64
	for j, pv := range p {
		if pv <= 0 {
			continue
		}
		pj, dj := float64(pv), float64(dp[j])
		lp := math.Log(pj)
		gj := math.Sqrt(pj)
		if ex != 0.5 {
			gj = math.Exp(ex * lp)
		}
		if clobber {
			p[j] = F(gj)
		}
		G += gj
		A += gj * dj
		if learned {
			P1 += dj * pj
			P3 += dj * pj * lp
			S += pj * lp
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
		g := float64(pv)
		switch {
		case clobber:
		case ex == 0.5:
			g = math.Sqrt(g)
		default:
			g = math.Exp(ex * math.Log(g))
		}
		dp[j] = F(g * (float64(dp[j]) - mean))
	}
	if !learned {
		return 0
	}
	beta := alpha - 1
	return (P1-mean)/(beta*beta) - (P3-S*mean)/beta
}

// b2i is 1 for true and 0 for false, without a branch.
func b2i(b bool) int {
	n := 0
	if b {
		n = 1
	}
	return n
}
