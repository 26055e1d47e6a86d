package model

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
)

// headRun is one training forward and backward: its loss and gradients.
type headRun[F kernels.Float] struct {
	loss  float64
	grads []F
}

// runHead runs a training forward of m on (tokens, targets), the head
// fused with its backward or not, with the loss scale fwdScale at the
// forward and bwdScale at the backward, and returns the loss and the
// gradients of one Backward. A forward with targets keeps no logits.
func runHead[F kernels.Float](t *testing.T, m *Model[F], tokens, targets []int32, B, T int, fused bool, fwdScale, bwdScale float64) headRun[F] {
	t.Helper()
	defer func(f bool) { fuseHead = f }(fuseHead)
	fuseHead = fused
	m.Train, m.LossScale = true, fwdScale
	defer func() { m.Train, m.LossScale = false, 0 }()
	loss, err := m.Forward(tokens, targets, B, T)
	if err != nil {
		t.Fatal(err)
	}
	if l := m.Logits(); l != nil {
		t.Errorf("Logits() after a forward with targets has %d values, want nil", len(l))
	}
	r := headRun[F]{loss: loss}
	m.LossScale = bwdScale
	m.ZeroGrad()
	m.Backward()
	r.grads = slices.Clone(m.Grads)
	return r
}

// TestHeadFused checks the head of a training forward fused with its
// backward against the head that keeps only the loss and recomputes each
// chunk's logits in Backward: bitwise the same loss and gradients, with one
// chunk and with several, in float64 and in float32 under each precision,
// with label smoothing and ignored targets. Chunks change only how the
// head's weight and bias gradients are summed. A second Backward doubles
// the gradients, and a loss scale changed between forward and backward is
// applied.
func TestHeadFused(t *testing.T) {
	train := `, "train": {"label_smoothing": 0.1}`
	for _, c := range []struct{ name, js string }{
		{"lm", fmt.Sprintf(tinyLM, "")},
		{"lm smoothing checkpoint", fmt.Sprintf(tinyLM, `, "checkpoint": true`+train)},
		{"lm reversible", fmt.Sprintf(tinyLM, `, "reversible": true`)},
		{"tag smoothing", fmt.Sprintf(tinyTag, train)},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newTestModel(t, c.js)
			testHeadFused(t, m, 0)
		})
	}
	for _, prec := range []string{"fp32", "bf16", "fp16"} {
		t.Run("float32 "+prec, func(t *testing.T) {
			m, err := New[float32](testConfig(fmt.Sprintf(tinyLM, `, "precision": "`+prec+`"`+train)))
			if err != nil {
				t.Fatal(err)
			}
			m.Init(2)
			scale := 0.0
			if prec == "fp16" {
				scale = 1024
			}
			testHeadFused(t, m, scale)
		})
	}
}

func testHeadFused[F kernels.Float](t *testing.T, m *Model[F], scale float64) {
	const B, T = 3, 7 // 21 rows: chunks of 8 leave a short last one
	tokens, targets := testBatch(m.Config, B, T, 4)
	targets[9] = -1
	defer func(r int) { headChunkRows = r }(headChunkRows)
	var whole []F
	for _, rows := range []int{0, 8, 1} {
		headChunkRows = rows
		if r := headRows(B*T, m.Config.HeadOut()); rows == 0 && r != B*T {
			t.Fatalf("headRows(%d, %d) = %d, want every row in one chunk", B*T, m.Config.HeadOut(), r)
		}
		fused := runHead(t, m, tokens, targets, B, T, true, scale, scale)
		plain := runHead(t, m, tokens, targets, B, T, false, scale, scale)
		if fused.loss != plain.loss {
			t.Errorf("chunks of %d rows: fused loss %v, unfused %v", rows, fused.loss, plain.loss)
		}
		for i := range plain.grads {
			if fused.grads[i] != plain.grads[i] {
				t.Fatalf("chunks of %d rows: grad %d fused %v, unfused %v", rows, i, fused.grads[i], plain.grads[i])
			}
		}
		if rows == 0 {
			whole = fused.grads
			continue
		}
		checkClose(t, fmt.Sprintf("chunks of %d rows against one", rows), fused.grads, whole, 1e-5)
	}
	headChunkRows = 8
	for _, fuse := range []bool{true, false} {
		// A second Backward adds the same gradients again.
		first := runHead(t, m, tokens, targets, B, T, fuse, scale, scale)
		m.LossScale = scale
		m.Backward()
		m.LossScale = 0
		want := slices.Clone(first.grads)
		for i := range want {
			want[i] *= 2
		}
		checkClose(t, fmt.Sprintf("fused %v: second backward", fuse), m.Grads, want, 1e-6)

		// A loss scale set after the forward still scales every gradient.
		later := runHead(t, m, tokens, targets, B, T, fuse, scale, 4*max(scale, 1))
		for i := range want {
			want[i] = 4 * first.grads[i]
		}
		checkClose(t, fmt.Sprintf("fused %v: loss scale ×4 at backward", fuse), later.grads, want, 1e-5)
	}
}

// checkClose fails if got and want differ by more than tol relative to
// want's largest magnitude.
func checkClose[F kernels.Float](t *testing.T, what string, got, want []F, tol float64) {
	t.Helper()
	var big float64
	for _, w := range want {
		big = math.Max(big, math.Abs(float64(w)))
	}
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > tol*big || math.IsNaN(d) {
			t.Fatalf("%s: element %d is %v, want %v (max |want| %v)", what, i, got[i], want[i], big)
		}
	}
}

// TestHeadInspectOrder checks that Diagnose's inspection sees the head of a
// training forward with targets in the order of computation: LN_f's
// output, then each chunk's logits and their gradient, then (in Backward)
// LN_f's and the head's parameter gradients and LN_f's input gradient.
func TestHeadInspectOrder(t *testing.T) {
	defer func(r int) { headChunkRows = r }(headChunkRows)
	headChunkRows = 8
	m := newTestModel(t, fmt.Sprintf(tinyLM, ""))
	const B, T = 2, 6
	tokens, targets := testBatch(m.Config, B, T, 1)
	var names []string
	m.inspect = func(name string, _ []float64) {
		if strings.HasPrefix(name, "ln_f") || strings.HasPrefix(name, "head") {
			names = append(names, name)
		}
	}
	m.Train = true
	defer func() { m.inspect, m.Train = nil, false }()
	if _, err := m.Forward(tokens, targets, B, T); err != nil {
		t.Fatal(err)
	}
	m.ZeroGrad()
	m.Backward()
	want := []string{
		"ln_f: output",
		"head: logits (rows 0–8)", "head backward: logits gradient (rows 0–8)",
		"head: logits (rows 8–12)", "head backward: logits gradient (rows 8–12)",
		"ln_f.weight: gradient", "ln_f.bias: gradient", "head.weight: gradient", "head.bias: gradient", // in Specs order
		"ln_f backward: input gradient",
	}
	if !slices.Equal(names, want) {
		t.Errorf("inspected %q, want %q", names, want)
	}
}
