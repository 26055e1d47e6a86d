package model

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
)

// headRun is one training forward and backward: its loss, gradients and
// logits.
type headRun[F kernels.Float] struct {
	loss   float64
	grads  []F
	logits []F
}

// runHead runs a training forward of m on (tokens, targets), fused unless
// keep, with the loss scale fwdScale at the forward and bwdScale at the
// backward, and returns the loss, Logits() after the forward and the
// gradients of one Backward.
func runHead[F kernels.Float](t *testing.T, m *Model[F], tokens, targets []int32, B, T int, keep bool, fwdScale, bwdScale float64) headRun[F] {
	t.Helper()
	m.Train, m.keepLogits, m.LossScale = true, keep, fwdScale
	defer func() { m.Train, m.keepLogits, m.LossScale = false, false, 0 }()
	loss, err := m.Forward(tokens, targets, B, T)
	if err != nil {
		t.Fatal(err)
	}
	r := headRun[F]{loss: loss, logits: slices.Clone(m.Logits())}
	m.LossScale = bwdScale
	m.ZeroGrad()
	m.Backward()
	r.grads = slices.Clone(m.Grads)
	return r
}

// TestHeadFused checks the fused head of a training forward (headFused)
// against the head that keeps its logits: the same loss and the same
// gradients, with one chunk and with several, in float64 and in float32
// under each precision, with label smoothing and ignored targets; that a
// fused forward keeps no logits; that a second Backward doubles the
// gradients; and that a loss scale changed between forward and backward
// is applied.
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
		kept := runHead(t, m, tokens, targets, B, T, true, scale, scale)
		fused := runHead(t, m, tokens, targets, B, T, false, scale, scale)
		if fused.logits != nil {
			t.Errorf("chunks of %d rows: Logits() after a fused forward has %d values, want nil", rows, len(fused.logits))
		}
		if len(kept.logits) != B*T*m.Config.HeadOut() {
			t.Fatalf("chunks of %d rows: Logits() kept %d values", rows, len(kept.logits))
		}
		// One chunk: the unfused loss's sums, bit for bit; more chunks
		// split the per-thread partial sums differently.
		if d := math.Abs(fused.loss - kept.loss); (rows == 0 && d != 0) || d > 1e-6*math.Abs(kept.loss) {
			t.Errorf("chunks of %d rows: fused loss %v, kept %v", rows, fused.loss, kept.loss)
		}
		// Both paths run the same chunks, so the gradients are equal, but
		// for the logits: the float32 GEMM's kernel for a row may depend on
		// how many rows share its call.
		var f F
		if _, f64 := any(f).(float64); rows != 0 && !f64 {
			checkClose(t, fmt.Sprintf("chunks of %d rows, fused against kept", rows), fused.grads, kept.grads, 1e-5)
		} else {
			for i := range kept.grads {
				if fused.grads[i] != kept.grads[i] {
					t.Fatalf("chunks of %d rows: grad %d fused %v, kept %v", rows, i, fused.grads[i], kept.grads[i])
				}
			}
		}
		if rows == 0 {
			whole = fused.grads
			continue
		}
		// Chunks change only the association of the head's weight and bias
		// gradient sums.
		checkClose(t, fmt.Sprintf("chunks of %d rows against one", rows), fused.grads, whole, 1e-5)
	}
	headChunkRows = 8

	// A second Backward adds the same gradients again.
	fused := runHead(t, m, tokens, targets, B, T, false, scale, scale)
	m.LossScale = scale
	m.Backward()
	m.LossScale = 0
	want := slices.Clone(fused.grads)
	for i := range want {
		want[i] *= 2
	}
	checkClose(t, "second backward", m.Grads, want, 1e-6)

	// A loss scale set after the forward still scales every gradient.
	later := runHead(t, m, tokens, targets, B, T, false, scale, 4*max(scale, 1))
	for i := range want {
		want[i] = 4 * fused.grads[i]
	}
	checkClose(t, "loss scale ×4 at backward", later.grads, want, 1e-5)
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
