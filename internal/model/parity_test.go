package model

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/safetensors"
)

// parityContract must equal CONTRACT in scripts/torch_reference.py.
const parityContract = "1"

// TestTorchParity compares, for every case directory under
// testdata/parity, tokenmix's logits, loss, every gradient and the losses of
// the first 5 AdamW steps with the float64 PyTorch reference written by
// scripts/torch_reference.py. float32 must agree to max relative error
// 1e-3 per tensor (max|a−b|/max|b| over that tensor), float64 to 1e-6 (the
// reference gradients are stored as F32). Only gradients that are zero in
// exact arithmetic (zeroGrad) are measured against 1e-3 of the case's
// largest gradient instead.
func TestTorchParity(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "parity", "*"))
	if len(dirs) == 0 {
		t.Fatal("no parity cases under testdata/parity")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			regen := fmt.Sprintf("regenerate with: /usr/bin/python3 scripts/torch_reference.py --case internal/model/%s (from the repository root)", filepath.ToSlash(dir))
			cfgBytes, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := ParseConfig(cfgBytes)
			if err != nil {
				if strings.Contains(err.Error(), "mixer.kind: unknown kind") {
					t.Skipf("%v (the case's mixer is not registered yet)", err)
				}
				t.Fatal(err)
			}
			ref, err := safetensors.ReadFile(filepath.Join(dir, "ref.safetensors"))
			if err != nil {
				t.Fatalf("%v; %s", err, regen)
			}
			if got := ref.Metadata["contract"]; got != parityContract {
				t.Fatalf("reference has contract %q, want %q: stale; %s", got, parityContract, regen)
			}
			for _, f := range []string{"config", "weights", "batch"} {
				name := f + ".json"
				if f != "config" {
					name = f + ".safetensors"
				}
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatalf("%v; %s", err, regen)
				}
				sum := sha256.Sum256(b)
				if hex.EncodeToString(sum[:]) != ref.Metadata[f+"_sha256"] {
					t.Fatalf("%s changed since the reference was written: stale; %s", name, regen)
				}
			}
			weights, err := safetensors.ReadFile(filepath.Join(dir, "weights.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			batch, err := safetensors.ReadFile(filepath.Join(dir, "batch.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			// float32 on every kernel path this CPU has (plain Go, AVX2, AVX-512).
			var w32, z32 float64
			var at32 string
			for _, path := range kernels.Paths() {
				old := kernels.SetPath(path)
				w, at, z := parityCase[float32](t, cfg, weights, batch, ref, 1e-3, regen+" [kernel path "+path.String()+"]")
				kernels.SetPath(old)
				if w >= w32 {
					w32, at32 = w, at+" on "+path.String()
				}
				z32 = math.Max(z32, z)
			}
			w64, at64, z64 := parityCase[float64](t, cfg, weights, batch, ref, 1e-6, regen)
			t.Logf("max rel err per tensor: float32 %.2g (%s), float64 %.2g (%s); zero-exact gradients vs 1e-3·gmax: float32 %.2g, float64 %.2g",
				w32, at32, w64, at64, z32, z64)
		})
	}
}

// parityCase runs one case in float type F and returns the worst relative
// error over all compared tensors measured on their own scale, where it
// occurred, and the worst error of the zero-exact gradients (zeroGrad).
func parityCase[F kernels.Float](t *testing.T, cfg *Config, weights, batch, ref *safetensors.File, tol float64, regen string) (worst float64, at string, zworst float64) {
	t.Helper()
	m, err := New[F](cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadWeights(weights); err != nil {
		t.Fatal(err)
	}
	if cfg.Train != nil {
		m.Seed = cfg.Train.Seed
	}
	out, err := m.GradFile(batch)
	if err != nil {
		t.Fatal(err)
	}
	typ := fmt.Sprintf("%T", F(0))
	names := map[string]bool{}
	for _, n := range ref.Names() {
		if n != "train_losses" {
			names[n] = true
		}
	}
	for _, n := range out.Names() {
		if !names[n] {
			t.Fatalf("%s is not in the reference: stale; %s", n, regen)
		}
		delete(names, n)
	}
	if len(names) > 0 {
		var extra []string
		for n := range names {
			extra = append(extra, n)
		}
		sort.Strings(extra)
		t.Fatalf("reference has tensors the model does not: %v: stale; %s", extra, regen)
	}
	// Every tensor is compared with its own scale: max|a−b| / max|b| over
	// that tensor. Two exceptions, both relative to gmax, the largest
	// reference gradient of the case:
	//   - gradients that are zero in exact arithmetic (see zeroGrad) have no
	//     scale of their own; their denominator is floored at 1e-3·gmax, and
	//     the reference must confirm they are ~0 (≤ 1e-9·gmax);
	//   - every other gradient's denominator is floored at 1e-6·gmax, which
	//     only matters for a tensor that is itself ~0.
	var gmax float64
	for _, n := range ref.Names() {
		if strings.HasPrefix(n, "grad.") {
			v, _, _ := ref.F64(n)
			for _, x := range v {
				gmax = math.Max(gmax, math.Abs(x))
			}
		}
	}
	for _, n := range out.Names() {
		got, gs, _ := out.F64(n)
		want, ws, _ := ref.F64(n)
		if fmt.Sprint(gs) != fmt.Sprint(ws) {
			t.Fatalf("%s: shape %v, reference %v; %s", n, gs, ws, regen)
		}
		floor, zero := 0.0, false
		if strings.HasPrefix(n, "grad.") {
			floor = 1e-6 * gmax
			if zero = zeroGrad(n, cfg.Mixer.Has("rope")); zero {
				if r := relErr(want, make([]float64, len(want)), 0); r > 1e-9*gmax {
					t.Fatalf("%s: reference max|g| = %.3g is not ~0 (gmax %.3g): zeroGrad is wrong for this mixer", n, r, gmax)
				}
				floor = 1e-3 * gmax
			}
		}
		e := relErr(got, want, floor)
		if zero {
			zworst = math.Max(zworst, e)
		} else if e > worst {
			worst, at = e, n
		}
		if e > tol {
			t.Errorf("%s %s: max rel err %.3g > %.3g", typ, n, e, tol)
		}
	}
	// The first 5 AdamW steps on the same batch.
	wantL, _, err := ref.F64("train_losses")
	if err != nil {
		t.Fatalf("%v; %s", err, regen)
	}
	m2, _ := New[F](cfg)
	m2.LoadWeights(weights)
	tr := NewTrainer(m2)
	tokens, targets, B, T, _ := cfg.ReadBatch(batch)
	gotL := make([]float64, len(wantL))
	for i := range gotL {
		st, err := tr.Step(tokens, targets, B, T)
		if err != nil {
			t.Fatal(err)
		}
		gotL[i] = st.Loss
	}
	for i := range gotL {
		if e := math.Abs(gotL[i]-wantL[i]) / math.Abs(wantL[i]); e > tol {
			t.Errorf("%s train loss %d: %.8g, reference %.8g (rel err %.3g > %.3g)", typ, i, gotL[i], wantL[i], e, tol)
		} else if e > worst {
			worst, at = e, fmt.Sprintf("train loss %d", i)
		}
	}
	return worst, at, zworst
}

// zeroGrad reports whether the gradient named n is zero in exact arithmetic:
// the key bias of every mixer that has one (full, strided, fixed, entmax,
// topk: adding a constant to a query's score row leaves softmax, α-entmax
// and top-k selection unchanged; aft_*: AFT is invariant to a per-channel
// shift of K). LSH has a shared qk projection and no k.bias. With RoPE
// the key bias is rotated by each key's position, so it is no longer a
// constant shift of the row: rope says the mixer has that option.
func zeroGrad(n string, rope bool) bool {
	return !rope && strings.HasSuffix(n, ".mixer.k.bias")
}

// relErr is max|a−b| / max(max|b|, floor) (max|a−b| when that is 0).
func relErr(a, b []float64, floor float64) float64 {
	var num float64
	den := floor
	for i := range b {
		num = math.Max(num, math.Abs(a[i]-b[i]))
		den = math.Max(den, math.Abs(b[i]))
	}
	if den == 0 {
		return num
	}
	return num / den
}
