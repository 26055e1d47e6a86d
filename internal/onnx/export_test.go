package onnx_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/nodetest"
	"github.com/tokenmix/tokenmix/internal/onnx"
	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// exported is one model of the parity check: its config, its logits from
// tokenmix on tokens [B,T], and its file.
type exported struct {
	name   string
	m      *model.Model[float32]
	B, T   int
	tokens []int32
	want   []float32
	path   string
}

// newModel builds a model of mixer opts with random weights (biases, gains
// and position biases included, so that each matters).
func newModel(t *testing.T, tc mixer.TestCase, kind, task string, seed uint64) *model.Model[float32] {
	return newModelRev(t, tc, kind, task, seed, false)
}

func newModelRev(t *testing.T, tc mixer.TestCase, kind, task string, seed uint64, reversible bool) *model.Model[float32] {
	t.Helper()
	cfg := map[string]any{"vocab_size": 16, "d_model": tc.D, "n_heads": tc.Heads, "n_layers": 2, "d_ff": 2 * tc.D,
		"max_len": max(tc.MaxLen, tc.T, 12), "causal": tc.Causal, "task": task, "mixer": mixer.OptionsOf(kind, tc.Opts)}
	switch task {
	case "classify":
		cfg["n_classes"] = 3
	case "tag":
		cfg["n_classes"] = 5
	}
	if tc.Pad {
		cfg["pad_id"] = 0
	}
	if reversible {
		cfg["reversible"] = true
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := model.ParseConfig(b)
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	m, err := model.New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(seed)
	m.Seed, m.Step = seed+1, 3 // LSH's rotations come from the pass seed
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range m.Params {
		m.Params[i] += float32(0.1 * rng.NormFloat64())
	}
	return m
}

// batch returns random tokens [B,T] (1…15; with pad, the last sequence's
// tail and one inner position of the first are pad id 0).
func batch(B, T int, pad bool, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 2))
	tok := make([]int32, B*T)
	for i := range tok {
		tok[i] = 1 + int32(rng.IntN(15))
	}
	if pad {
		for t := T - T/3; t < T; t++ {
			tok[(B-1)*T+t] = 0
		}
		tok[T/2] = 0
	}
	return tok
}

func logits(t *testing.T, m *model.Model[float32], tok []int32, B, T int) []float32 {
	t.Helper()
	if _, err := m.Forward(tok, nil, B, T); err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), m.Logits()...)
}

// TestONNXRuntimeParity: for every kind with an export rule and every
// case of its conformance suite (causal as an lm, bidirectional as a
// classifier, a tagger and an embedder, with padding where the case has
// it; the first case with reversible blocks and its weights as external
// data), ONNX Runtime's logits on the exported file agree with tokenmix's
// within 1e-4 of their largest magnitude, at two batch sizes and two
// lengths. It runs where TOKENMIX_NODE_MODULES names a node_modules holding
// onnxruntime-node (.ci/run installs one).
func TestONNXRuntimeParity(t *testing.T) {
	node, modules := nodetest.Modules(t)
	dir := t.TempDir()
	var all []exported
	for _, k := range registry.All() {
		if !strings.Contains(onnx.Supported(), k.Name) {
			continue
		}
		for ci, tc := range k.Tests {
			tasks := []string{"lm"}
			if !tc.Causal {
				tasks = []string{"classify", "tag", "embed"}
			}
			for ti, task := range tasks {
				seed := uint64(100*ci + len(all))
				// Reversible blocks on the first case of each kind.
				m := newModelRev(t, tc, k.Name, task, seed, ci == 0 && ti == 0)
				// Each kind's first case also with its weights as
				// external data (the inline limit lowered).
				o := onnx.Options{Version: "test", DataName: fmt.Sprintf("m%d.onnx.data", len(all))}
				external := ci == 0 && ti == 0
				restore := func() {}
				if external {
					restore = onnx.SetExternal(0, 64)
				}
				f, err := onnx.Export(m, o)
				restore()
				if err != nil {
					t.Fatalf("%s %s %s: %v", k.Name, tc.Name, task, err)
				}
				if external != (f.Data != nil) {
					t.Fatalf("%s %s %s: external data %d bytes", k.Name, tc.Name, task, len(f.Data))
				}
				path := filepath.Join(dir, fmt.Sprintf("m%d.onnx", len(all)))
				if err := os.WriteFile(path, f.Model, 0o644); err != nil {
					t.Fatal(err)
				}
				if f.Data != nil {
					if err := os.WriteFile(filepath.Join(dir, f.DataName), f.Data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				T := max(tc.T, 2)
				for _, shape := range [][2]int{{1, T}, {3, max(1, T/2+1)}} {
					tok := batch(shape[0], shape[1], tc.Pad, seed)
					all = append(all, exported{name: fmt.Sprintf("%s/%s/%s/B=%d,T=%d", k.Name, tc.Name, task, shape[0], shape[1]),
						m: m, B: shape[0], T: shape[1], tokens: tok, want: logits(t, m, tok, shape[0], shape[1]), path: path})
				}
			}
		}
	}
	type job struct {
		Model  string    `json:"model"`
		Tokens [][]int32 `json:"tokens"`
	}
	jobs := make([]job, len(all))
	for i, e := range all {
		jobs[i].Model = e.path
		for b := range e.B {
			jobs[i].Tokens = append(jobs[i].Tokens, e.tokens[b*e.T:(b+1)*e.T])
		}
	}
	in, _ := json.Marshal(jobs)
	cmd := exec.Command(node, "../../scripts/onnxruntime.mjs", modules)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("onnxruntime: %v\n%s", err, stderr.Bytes())
	}
	var res []struct {
		Dims   []int     `json:"dims"`
		Logits []float32 `json:"logits"`
		Error  string    `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(all) {
		t.Fatalf("onnxruntime output: %v (%d results for %d jobs)", err, len(res), len(all))
	}
	worst, at := 0.0, ""
	for i, e := range all {
		r := res[i]
		if r.Error != "" {
			t.Errorf("%s: onnxruntime: %s", e.name, r.Error)
			continue
		}
		if len(r.Logits) != len(e.want) {
			t.Errorf("%s: %d logits (dims %v), want %d", e.name, len(r.Logits), r.Dims, len(e.want))
			continue
		}
		var num, den float64
		for j, w := range e.want {
			num = max(num, math.Abs(float64(r.Logits[j])-float64(w)))
			den = max(den, math.Abs(float64(w)))
		}
		rel := num / den
		if rel > worst || math.IsNaN(rel) {
			worst, at = rel, e.name
		}
		if !(rel <= 1e-4) {
			t.Errorf("%s: max|onnx − tokenmix| / max|tokenmix| = %.3g", e.name, rel)
		}
	}
	t.Logf("%d models × shapes checked; worst relative error %.3g (%s)", len(all), worst, at)
	checkFiles(t, dir)
}

// checkFiles runs onnx.checker (with shape inference) on every .onnx file
// in dir, where a python3 with the onnx package is found.
func checkFiles(t *testing.T, dir string) {
	py := os.Getenv("PYTHON")
	if py == "" {
		py = "python3"
	}
	if exec.Command(py, "-c", "import onnx").Run() != nil {
		t.Log("onnx.checker not run: no python3 with the onnx package")
		return
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.onnx"))
	args := append([]string{"-c", "import onnx, sys\nfor p in sys.argv[1:]:\n    onnx.checker.check_model(onnx.load(p), full_check=True)\nprint(onnx.__version__, len(sys.argv) - 1)"}, files...)
	out, err := exec.Command(py, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("onnx.checker: %v\n%s", err, out)
	}
	t.Logf("onnx.checker %s files: accepted", strings.TrimSpace(string(out)))
}

var (
	addOutside sync.Once
	outsideErr error
)

// TestExportRefuses: what the graph cannot express is an error naming
// it.
func TestExportRefuses(t *testing.T) {
	base := mixer.TestCase{D: 8, Heads: 2, T: 8, Causal: true}
	simple, _ := registry.Lookup("aft_simple")
	outside := mixer.Kind{Name: "onnx_test_outside", Paper: "none (a test kind)", Causal: true, Bidirectional: true, Tests: simple.Tests,
		New32: func(c mixer.Config) (mixer.Mixer[float32], error) {
			k, _ := registry.Lookup("aft_simple")
			return k.New32(mixer.Config{D: c.D, Heads: c.Heads, MaxLen: c.MaxLen, Causal: c.Causal, Opts: mixer.OptionsOf("aft_simple", nil)})
		},
		New64: func(c mixer.Config) (mixer.Mixer[float64], error) {
			k, _ := registry.Lookup("aft_simple")
			return k.New64(mixer.Config{D: c.D, Heads: c.Heads, MaxLen: c.MaxLen, Causal: c.Causal, Opts: mixer.OptionsOf("aft_simple", nil)})
		}}
	addOutside.Do(func() { outsideErr = registry.Add(outside) }) // once a process: go test -count=N runs tests again
	if outsideErr != nil {
		t.Fatal(outsideErr)
	}
	for _, tc := range []struct {
		kind string
		opts map[string]any
		want string
	}{
		{"onnx_test_outside", nil, `"onnx_test_outside" has no export rule`},
	} {
		c := base
		c.Opts = tc.opts
		m := newModel(t, c, tc.kind, "lm", 1)
		if _, err := onnx.Export(m, onnx.Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.kind, err, tc.want)
		}
	}
}

// field is one protobuf field of a message: its number, and its varint
// value or its bytes.
type field struct {
	num int
	v   uint64
	b   []byte
}

// fields splits a protobuf message into its fields (varint, fixed32 and
// length-delimited only: what the encoder writes).
func fields(t *testing.T, b []byte) []field {
	t.Helper()
	var out []field
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			t.Fatal("bad varint")
		}
		b = b[n:]
		f := field{num: int(key >> 3)}
		switch key & 7 {
		case 0:
			f.v, n = binary.Uvarint(b)
			b = b[n:]
		case 2:
			l, n := binary.Uvarint(b)
			f.b, b = b[n:n+int(l)], b[n+int(l):]
		case 5:
			f.v, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		default:
			t.Fatalf("wire type %d", key&7)
		}
		out = append(out, f)
	}
	return out
}

func first(fs []field, num int) field {
	for _, f := range fs {
		if f.num == num {
			return f
		}
	}
	return field{}
}

// TestFileLayout reads an exported file back at the protobuf level: IR
// version 8, opset 17 of the default domain, input tokens int64 [batch,
// seq], output logits float [batch, seq, vocab], every model tensor an
// initializer of its own name (a linear's weight transposed), half weights
// with --dtype f16.
func TestFileLayout(t *testing.T) {
	tc := mixer.TestCase{D: 8, Heads: 2, T: 8, Causal: true}
	m := newModel(t, tc, "full", "lm", 3)
	for _, f16 := range []bool{false, true} {
		f, err := onnx.Export(m, onnx.Options{F16: f16, Version: "v", Meta: map[string]string{"k": "v"}})
		if err != nil {
			t.Fatal(err)
		}
		if f.Data != nil {
			t.Fatal("a small model's weights went to external data")
		}
		mp := fields(t, f.Model)
		if v := first(mp, 1).v; v != onnx.IRVersion {
			t.Errorf("ir_version %d", v)
		}
		op := fields(t, first(mp, 8).b)
		if first(op, 2).v != onnx.Opset || len(first(op, 1).b) != 0 {
			t.Errorf("opset_import %+v", op)
		}
		g := fields(t, first(mp, 7).b)
		inits := map[string][]field{}
		var inputs, outputs [][]field
		for _, f := range g {
			switch f.num {
			case 5:
				tf := fields(t, f.b)
				inits[string(first(tf, 8).b)] = tf
			case 11:
				inputs = append(inputs, fields(t, f.b))
			case 12:
				outputs = append(outputs, fields(t, f.b))
			}
		}
		if len(inputs) != 1 || string(first(inputs[0], 1).b) != "tokens" || len(outputs) != 1 || string(first(outputs[0], 1).b) != "logits" {
			t.Fatalf("inputs %v outputs %v", inputs, outputs)
		}
		tt := fields(t, first(fields(t, first(inputs[0], 2).b), 1).b)
		if first(tt, 1).v != onnx.Int64 {
			t.Errorf("tokens elem_type %d", first(tt, 1).v)
		}
		var dims []string
		for _, d := range fields(t, first(tt, 2).b) {
			dims = append(dims, string(first(fields(t, d.b), 2).b))
		}
		if strings.Join(dims, ",") != "batch,seq" {
			t.Errorf("tokens dims %v", dims)
		}
		for i, s := range m.Specs {
			tf, ok := inits[s.Name]
			if !ok {
				t.Fatalf("no initializer %s", s.Name)
			}
			want := onnx.Float
			if f16 {
				want = onnx.Float16
			}
			if dt := first(tf, 2).v; dt != uint64(want) {
				t.Errorf("%s: data_type %d, want %d", s.Name, dt, want)
			}
			raw := first(tf, 9).b
			if !f16 && strings.HasSuffix(s.Name, "q.weight") {
				w := m.ParamAt(i)
				d := s.Shape[1]
				// Stored [in, out]: element (in=1, out=0) is W[0][1].
				if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*s.Shape[0]:])); got != w[1] {
					t.Errorf("%s: stored [in,out][1][0] = %v, want W[0][1] = %v (d %d)", s.Name, got, w[1], d)
				}
			}
		}
	}
}
