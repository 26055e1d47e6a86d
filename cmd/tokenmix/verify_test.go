package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyAndDamagedResume: verify passes a fresh run and, after one
// byte of the newest weights is flipped, exits 1 naming the file; loading
// that checkpoint is an error naming it; train --resume reports it, moves
// it to ckpt/damaged-<step>, resumes from the checkpoint before it and
// ends with weights byte-identical to an uninterrupted run.
func TestVerifyAndDamagedResume(t *testing.T) {
	dir := t.TempDir()
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog\n"), 100)
	os.WriteFile(filepath.Join(dir, "t.txt"), text, 0o644)
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(trainCfg), 0o644)
	for _, out := range []string{"a", "b"} {
		if r := cli(t, dir, "train", "--config", "c.json", "--data", "t.txt", "--out", out); r.code != 0 {
			t.Fatalf("train %s: exit %d\n%s", out, r.code, r.stderr)
		}
	}
	if r := cli(t, dir, "verify", "--run", "b"); r.code != 0 || !strings.Contains(r.stdout, "checkpoint 6: ok") {
		t.Fatalf("verify a good run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	w := filepath.Join(dir, "b", "ckpt", "00000006", "weights.safetensors")
	b, err := os.ReadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	os.WriteFile(w, b, 0o644)
	r := cli(t, dir, "verify", "--run", "b")
	if r.code != 1 || !strings.Contains(r.stdout, "checkpoint 4: ok") || !strings.Contains(r.stdout, "00000006/weights.safetensors: damaged checkpoint") ||
		!strings.Contains(r.stderr, "1 of 2 checkpoints") {
		t.Errorf("verify a damaged run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, dir, "predict", "--run", "b", "--input", "t.txt"); r.code != 1 || !strings.Contains(r.stderr, "weights.safetensors: damaged checkpoint") {
		t.Errorf("predict on the damaged checkpoint: exit %d, stderr %q", r.code, r.stderr)
	}
	r = cli(t, dir, "train", "--resume", "--data", "t.txt", "--out", "b")
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "damaged checkpoint") || !strings.Contains(r.stdout+r.stderr, "damaged-00000006") {
		t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "b", "ckpt", "damaged-00000006", "weights.safetensors")); err != nil {
		t.Errorf("the damaged checkpoint was not moved aside: %v", err)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "a", "ckpt", "00000006", "weights.safetensors"))
	if got, err := os.ReadFile(w); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the resumed run's weights differ from the uninterrupted run's (%v)", err)
	}
	if r := cli(t, dir, "verify", "--run", "b"); r.code != 0 {
		t.Errorf("verify after the resume: exit %d\n%s", r.code, r.stdout)
	}
}
