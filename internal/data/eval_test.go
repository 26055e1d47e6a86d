package data

import (
	"errors"
	"math"
	"testing"
)

func TestLogits(t *testing.T) {
	x := []float32{1, 3, 3, -2}
	// Known values: softmax of (1, 3, 3, −2) by hand, z = e^1 + 2e^3 + e^−2.
	z := math.E + 2*math.Exp(3) + math.Exp(-2)
	p := Softmax(x)
	for i, v := range x {
		want := math.Exp(float64(v)) / z
		if math.Abs(float64(p[i])-want) > 1e-7 {
			t.Errorf("softmax[%d] = %v, want %v", i, p[i], want)
		}
		if lp := LogSoftmaxAt(x, i); math.Abs(lp-(float64(v)-math.Log(z))) > 1e-12 {
			t.Errorf("log-softmax[%d] = %v, want %v", i, lp, float64(v)-math.Log(z))
		}
	}
	if Argmax(x) != 1 || Argmax([]float32{-1}) != 0 {
		t.Errorf("argmax %d: want the first of the equal maxima", Argmax(x))
	}
	// No underflow to log(0): a logit 1000 below the maximum.
	if lp := LogSoftmaxAt([]float32{0, -1000}, 1); math.Abs(lp+1000) > 1e-9 {
		t.Errorf("log-softmax far below the maximum: %v", lp)
	}
	if x[0] != 1 || x[3] != -2 {
		t.Error("input modified")
	}
}

// TestEvaluate scores a task with a forward pass of known logits: each
// position predicts its target with logit 2 (others 0) at every position
// whose token is even, and a wrong class at odd ones.
func TestEvaluate(t *testing.T) {
	text := []byte("0123456789012345678901234567890123456789")
	const V = 256
	fwd := func(b *Batch) ([]float32, error) {
		lg := make([]float32, b.B*b.T*V)
		for i, tok := range b.Tokens {
			if i%b.T >= b.Lens[i/b.T] {
				continue
			}
			y := int(b.Targets[i])
			if y < 0 {
				y = 0
			}
			if tok%2 == 1 {
				y = (y + 1) % V
			}
			lg[i*V+y] = 2
		}
		return lg, nil
	}
	// −log softmax: the target has logit 2 or 0 among 255 zeros.
	right := -(2 - math.Log(math.Exp(2)+255))
	wrong := -(0 - math.Log(math.Exp(2)+255))
	for _, tc := range []struct{ T, context, batch, maxBatches, bucket int }{
		{8, 0, 2, 0, 0}, {8, 6, 3, 0, 0}, {8, 6, 3, 0, 4}, {7, 3, 1, 0, 0}, {39, 0, 5, 0, 0},
	} {
		w, _ := NewWindows(BytesText(text), tc.T, tc.context)
		task := NewTextTask("t", nil, w, nil)
		ev, err := Evaluate(fwd, task, Val, tc.batch, tc.maxBatches, tc.bucket)
		if err != nil {
			t.Fatal(err)
		}
		// Bytes 1..39 are scored once, each predicted from the byte before:
		// tokens 0..38, of which 20 are even.
		wantLoss := (20*right + 19*wrong) / 39
		if ev.Targets != 39 || ev.Examples != w.Len() || math.Abs(ev.Loss-wantLoss) > 1e-12 ||
			math.Abs(ev.Accuracy-20.0/39) > 1e-12 || math.Abs(ev.Metric-wantLoss/math.Ln2) > 1e-12 {
			t.Errorf("%+v: %+v, want loss %v over 39 targets in %d windows", tc, ev, wantLoss, w.Len())
		}
	}
	// A capped evaluation takes the first windows.
	w, _ := NewWindows(BytesText(text), 8, 0)
	ev, _ := Evaluate(fwd, NewTextTask("t", nil, w, nil), Val, 2, 1, 0)
	if ev.Targets != 16 || ev.Examples != 2 {
		t.Errorf("capped: %+v, want 16 targets in 2 windows", ev)
	}
	boom := errors.New("boom")
	if _, err := Evaluate(func(*Batch) ([]float32, error) { return nil, boom }, NewTextTask("t", nil, w, nil), Val, 2, 0, 0); !errors.Is(err, boom) {
		t.Errorf("forward error: %v", err)
	}
	if _, err := Evaluate(func(b *Batch) ([]float32, error) { return make([]float32, len(b.Targets)*4), nil }, NewTextTask("t", nil, w, nil), Val, 2, 0, 0); err == nil {
		t.Error("targets beyond the logits: no error")
	}
	if ev, err := Evaluate(fwd, NewTextTask("t", nil, w, nil), Test, 2, 0, 0); err != nil || ev != (Eval{}) {
		t.Errorf("empty split: %+v %v", ev, err)
	}
}
