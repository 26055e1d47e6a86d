package arena

import (
	"bytes"
	"testing"

	"github.com/tokenmix/tokenmix/internal/configs"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
)

// FuzzPreset checks that ParsePreset never panics, and that a preset it
// accepts parses back from its canonical form and yields model configs
// (for a made-up task) without a panic.
//
//	go test -run '^$' -fuzz '^FuzzPreset$' -fuzztime 45s ./internal/arena
func FuzzPreset(f *testing.F) {
	for _, name := range configs.Names() {
		b, err := configs.FS.ReadFile(name + ".json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"task": {"name": "recall", "len": 32}, "model": {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16}, "budget": "10",
		  "mixers": ["full", "lsh"], "mixer_options": {"lsh": {"bucket_size": "sqrt_len"}}}`,
		`{"task": {"name": "gosrc"}, "model": {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "causal": false}, "budget": "90s", "total_budget": "1s"}`,
		`{"task": {"name": "listops"}, "model": {}, "budget": "0"}`,
		`{"task": {"name": "fmnist"}, "model": {"vocab_size": 3}, "budget": "1h", "jobs": -1}`,
		`{"task": {}, "model": {}, "budget": "1"}`,
		`{"task": [], "model": {}, "budget": "1"}`,
		`{"task": null, "model": {}, "budget": "1"}`,
		`{"task": {"name": "recall"}, "model": {}, "budget": "1", "mixers": ["nonesuch"]}`,
		`{"task": {"name": "recall"}, "model": {}, "budget": "1", "mixer_options": {"full": {"kind": "lsh"}}}`,
		`{"task": {"name": "recall"}, "model": {}, "budget": "1", "time": "-1s"}`,
		`{"task": {"name": "recall"}, "model": {}, "budget": "1"} {}`,
		`[]`,
		``,
	} {
		f.Add([]byte(s))
	}
	info := data.Info{Name: "fuzz", Mode: data.Classify, Vocab: 16, Classes: 3, PadID: 0, MaxLen: 16}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePreset(b)
		if err != nil {
			if p != nil {
				t.Fatalf("ParsePreset returned a preset with error %v", err)
			}
			return
		}
		canon := p.Canonical()
		p2, err := ParsePreset(canon)
		if err != nil {
			t.Fatalf("re-parsing the canonical form %s: %v", canon, err)
		}
		if c2 := p2.Canonical(); !bytes.Equal(canon, c2) {
			t.Fatalf("canonical form changed:\n%s\n%s", canon, c2)
		}
		p.TaskName()
		runs, err := planRuns(p, info, 0, 0)
		if err != nil {
			return
		}
		for _, r := range runs {
			if r.skip != "" {
				continue
			}
			js, err := p.ModelJSON(r.kind, info, r.causal, 10)
			if err != nil {
				continue
			}
			model.ParseConfig(js)
		}
		p2.SetLen(8)
	})
}
