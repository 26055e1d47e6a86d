package attn

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/mixer"
)

// TestRopeTable checks the table path (RopeApply, RopeRows) against the
// definition (RopeRef) in float64 and float32, that the inverse undoes
// the rotation, and that a score of rotated vectors depends on the
// positions only through their difference.
func TestRopeTable(t *testing.T) {
	const B, T, H, Dh = 2, 50, 3, 8
	D := H * Dh
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, B*T*D)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	for _, base := range []float64{10000, 100, 3.5} {
		r := &Rope{Base: base, H: H, Dh: Dh}
		got := append([]float64(nil), x...)
		RopeApply(r, 3, got, B, T, false)
		want := append([]float64(nil), x...)
		RopeRef(want, B, T, D, Dh, base, false)
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Fatalf("base %g: element %d: table %v, definition %v", base, i, got[i], want[i])
			}
		}
		// Decoding's rows at explicit positions (several per call, out of
		// order): row i of x placed at position pos[i] of a sequence.
		pos := []int{7, 0, 49}
		rows := append([]float64(nil), x[:len(pos)*D]...)
		RopeRows(r, rows, pos)
		for i, p := range pos {
			ref := make([]float64, T*D)
			copy(ref[p*D:], x[i*D:(i+1)*D])
			RopeRef(ref, 1, T, D, Dh, base, false)
			for c := range D {
				if math.Abs(rows[i*D+c]-ref[p*D+c]) > 1e-12 {
					t.Fatalf("base %g: RopeRows at position %d differs from the definition", base, p)
				}
			}
		}
		RopeApply(r, 2, got, B, T, true)
		for i := range got {
			if math.Abs(got[i]-x[i]) > 1e-12 {
				t.Fatalf("base %g: the inverse does not undo the rotation at %d", base, i)
			}
		}
		// float32 rounds the float64 rotation once.
		x32 := make([]float32, len(x))
		for i, v := range x {
			x32[i] = float32(v)
		}
		RopeApply(r, 1, x32, B, T, false)
		for i := range x32 {
			if math.Abs(float64(x32[i])-want[i]) > 1e-6*(1+math.Abs(want[i])) {
				t.Fatalf("base %g: float32 element %d: %v, want %v", base, i, x32[i], want[i])
			}
		}
	}
	// q_i·k_j after rotation depends on j − i only: shift both by 5.
	r := &Rope{Base: 100, H: 1, Dh: Dh}
	q, k := make([]float64, T*Dh), make([]float64, T*Dh)
	for i := range Dh {
		for p := range T {
			q[p*Dh+i], k[p*Dh+i] = x[i], x[Dh+i] // the same q and k at every position
		}
	}
	RopeApply(r, 1, q, 1, T, false)
	RopeApply(r, 1, k, 1, T, false)
	dot := func(i, j int) float64 {
		var s float64
		for c := range Dh {
			s += q[i*Dh+c] * k[j*Dh+c]
		}
		return s
	}
	for _, ij := range [][2]int{{3, 10}, {20, 2}, {0, 0}} {
		if a, b := dot(ij[0], ij[1]), dot(ij[0]+5, ij[1]+5); math.Abs(a-b) > 1e-9 {
			t.Errorf("score(%d,%d) = %v but shifted by 5: %v", ij[0], ij[1], a, b)
		}
	}
}

// TestRopeOptions: every refusal names its key.
func TestRopeOptions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   map[string]any
		d, h   int
		alibi  bool
		on     bool
		errKey string
	}{
		{"off", nil, 8, 2, false, false, ""},
		{"on", map[string]any{"rope": true}, 8, 2, false, true, ""},
		{"base", map[string]any{"rope": true, "rope_base": 500000}, 8, 2, false, true, ""},
		{"off-explicit", map[string]any{"rope": false}, 8, 2, true, false, ""},
		{"base-without-rope", map[string]any{"rope_base": 100}, 8, 2, false, false, "mixer.rope_base"},
		{"base-zero", map[string]any{"rope": true, "rope_base": 0}, 8, 2, false, false, "mixer.rope_base"},
		{"base-negative", map[string]any{"rope": true, "rope_base": -2}, 8, 2, false, false, "mixer.rope_base"},
		{"with-alibi", map[string]any{"rope": true}, 8, 2, true, false, "mixer.rope"},
		{"odd-width", map[string]any{"rope": true}, 6, 2, false, false, "mixer.rope"},
		{"not-a-bool", map[string]any{"rope": 1}, 8, 2, false, false, "mixer.rope"},
		{"null", map[string]any{"rope": nil}, 8, 2, false, false, "mixer.rope"},
		{"base-not-a-number", map[string]any{"rope": true, "rope_base": "big"}, 8, 2, false, false, "mixer.rope_base"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := mixer.OptionsOf("full", tc.opts)
			r := RopeOption(&o, tc.d, tc.h, tc.alibi)
			err := o.Err()
			switch {
			case tc.errKey == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.errKey != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.errKey+":")):
				t.Fatalf("error %v, want one naming %s", err, tc.errKey)
			case tc.errKey == "" && (r != nil) != tc.on:
				t.Fatalf("rope on = %v, want %v", r != nil, tc.on)
			}
		})
	}
}
