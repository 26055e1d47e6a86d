package run_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/run"
)

// bigCfg is a model of about 303M float32 parameters: 1.13 GiB of weights.
const bigCfg = `{"vocab_size": 256, "d_model": 2048, "n_heads": 16, "n_layers": 6, "d_ff": 8192, "max_len": 64,
 "causal": true, "task": "lm", "mixer": {"kind": "full"}}`

// TestLoadBigWeights (TOKENMIX_BIG_LOAD=1; it writes 3.4 GiB to a temporary
// directory): loading a model with 1.13 GiB of weights peaks below 1.2× the
// file's size in RSS, and a truncated or corrupt copy fails before
// allocating its size. Each load runs in a child process, whose peak RSS
// is its own.
func TestLoadBigWeights(t *testing.T) {
	if dir := os.Getenv("TOKENMIX_BIG_LOAD_CHILD"); dir != "" {
		_, err := run.LoadModel(dir, -1)
		rss, rerr := memstat.PeakRSS()
		fmt.Printf("load: %v\npeak rss: %d %v\n", err, rss, rerr)
		return
	}
	if os.Getenv("TOKENMIX_BIG_LOAD") == "" {
		t.Skip("set TOKENMIX_BIG_LOAD=1: writes 3.4 GiB and measures the peak RSS of loading")
	}
	root := t.TempDir()
	good := filepath.Join(root, "good")
	c, err := model.ParseConfig([]byte(bigCfg))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(1)
	os.MkdirAll(good, 0o755)
	os.WriteFile(filepath.Join(good, run.ConfigName), []byte(bigCfg), 0o644)
	if err := m.WeightsFile().WriteFile(filepath.Join(good, run.WeightsName)); err != nil {
		t.Fatal(err)
	}
	m = nil
	st, _ := os.Stat(filepath.Join(good, run.WeightsName))
	size := st.Size()
	b, err := os.ReadFile(filepath.Join(good, run.WeightsName))
	if err != nil {
		t.Fatal(err)
	}
	// Truncated: the last byte missing. Corrupt: one offset in the header
	// points past the data (the header's first "data_offsets":[0, becomes
	// [9, so the tensors overlap and the last one runs off the end).
	bad := map[string][]byte{"truncated": b[:len(b)-1]}
	hdr := strings.Replace(string(b[:4096]), `"data_offsets":[0,`, `"data_offsets":[9,`, 1)
	bad["corrupt"] = append([]byte(hdr), b[4096:]...)
	b = nil
	for name, data := range bad {
		d := filepath.Join(root, name)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, run.ConfigName), []byte(bigCfg), 0o644)
		if err := os.WriteFile(filepath.Join(d, run.WeightsName), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	child := func(dir string) (string, int64) {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestLoadBigWeights$")
		cmd.Env = append(os.Environ(), "TOKENMIX_BIG_LOAD_CHILD="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", dir, err, out)
		}
		var load string
		var rss int64
		for _, l := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(l, "load: "); ok {
				load = v
			}
			if v, ok := strings.CutPrefix(l, "peak rss: "); ok {
				rss, _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			}
		}
		return load, rss
	}
	load, rss := child(good)
	t.Logf("good: %s; weights %d MiB, peak RSS %d MiB (%.2f×)", load, size>>20, rss>>20, float64(rss)/float64(size))
	if load != "<nil>" || float64(rss) >= 1.2*float64(size) {
		t.Errorf("loading %d MiB of weights: %s, peak RSS %d MiB", size>>20, load, rss>>20)
	}
	for _, name := range []string{"truncated", "corrupt"} {
		load, rss := child(filepath.Join(root, name))
		t.Logf("%s: %s; peak RSS %d MiB", name, load, rss>>20)
		if load == "<nil>" || rss >= size/4 {
			t.Errorf("%s: %s, peak RSS %d MiB", name, load, rss>>20)
		}
	}
}
