package run

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzRunFiles checks that the JSON files of a run directory never make
// their readers panic: the input is written as run.json (Open), as a
// checkpoint's state.json (ReadState) and as metrics.jsonl (Metrics).
//
//	go test -run '^$' -fuzz '^FuzzRunFiles$' -fuzztime 45s ./internal/run
func FuzzRunFiles(f *testing.F) {
	for _, s := range []string{
		`{"format": 1, "task": "classify", "label_names": ["ham", "spam"], "version": "v0.1.0", "created": "2025-01-01T00:00:00Z"}`,
		`{"format": 1, "task": "lm", "label_names": null}`,
		`{"format": 2}`,
		`{"format": "1"}`,
		`{"step": 7, "planned_steps": 10, "data": {"pos": 3, "rng": [1, 2]}, "loss_sum": 1.5, "loss_steps": 2, "tokens": 4096, "train_s": 1.25, "wall_s": 2, "version": "dev"}`,
		`{"step": 7, "data": null}`,
		`{"step": 8}`,
		`{"step": 1e400}`,
		"{\"step\": 1, \"loss\": 2.5}\n{\"step\": 2, \"loss\": 2.25}\n{\"step\": 3, \"lo",
		"{\"step\": 1}\n\n{\"loss\": 2}\n{\"step\": 3}\n",
		"{\"step\": 1, \"x\": 1e400}\n",
		"[]\n{\"step\": 1}",
		`null`,
		``,
	} {
		f.Add([]byte(s))
	}
	const config = `{"vocab_size": 32, "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_len": 8,
 "causal": true, "task": "lm", "mixer": {"kind": "full"}}`
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		write := func(name string, data []byte) {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(ConfigName, []byte(config))
		write(InfoName, b)
		if d, err := Open(dir); err == nil && (d.Info.Format != Format || string(d.Config) != config) {
			t.Fatalf("Open: format %d, config %q", d.Info.Format, d.Config)
		}

		d := &Dir{Path: dir}
		write(filepath.Join(CkptDir, "00000007", StateName), b)
		if st, err := d.ReadState(7); err == nil && st.Step != 7 {
			t.Fatalf("ReadState(7): step %d", st.Step)
		}
		if step, err := d.Latest(); err != nil || step != 7 {
			t.Fatalf("Latest: %d, %v", step, err)
		}
		write(MetricsName, b)
		d.Metrics()
	})
}
