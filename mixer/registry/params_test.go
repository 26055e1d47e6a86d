package registry_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

var update = flag.Bool("update", false, "rewrite testdata/params.txt from the registry")

// TestParamNames: every built-in kind's parameter names, shapes and
// initialisation, causal and bidirectional, equal the committed list: the
// weight files tokenmix writes and reads (and the PyTorch reference) rely on
// them. Regenerate with go test ./mixer/registry -run TestParamNames -args -update after a change
// that is meant to rename or reshape a parameter.
func TestParamNames(t *testing.T) {
	var b strings.Builder
	for _, k := range registry.All() {
		if strings.HasPrefix(k.Name, "test_") {
			continue // kinds added by tests
		}
		for _, causal := range []bool{false, true} {
			if causal && !k.Causal || !causal && !k.Bidirectional {
				continue
			}
			opts := map[string]any{}
			for _, o := range mixer.Describe(k) {
				if o.Required {
					opts[o.Key] = 2
				}
			}
			c := mixer.Config{D: 12, Heads: 3, MaxLen: 10, Causal: causal, NLayers: 1, Opts: mixer.OptionsOf(k.Name, opts)}
			m, err := k.New32(c)
			if err != nil {
				t.Fatalf("%s: %v", k.Name, err)
			}
			for _, s := range m.Params() {
				fmt.Fprintf(&b, "%s causal=%v %s %v init=%d value=%v nodecay=%v\n", k.Name, causal, s.Name, s.Shape, s.Init, s.Value, s.NoDecay)
			}
		}
	}
	path := filepath.Join("testdata", "params.txt")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate: go test ./mixer/registry -run TestParamNames -args -update)", err)
	}
	if got := b.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("parameter list line %d: got %q, want %q (go test ./mixer/registry -run TestParamNames -args -update if the change is meant)", i+1, g, w)
			}
		}
	}
}
