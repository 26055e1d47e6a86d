package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIExportONNX: export --format onnx writes one file (half the size
// with --dtype f16) and a tokenizer.json beside it for a model that has
// one; it never overwrites, and bad flags are usage errors. (ONNX Runtime
// runs the files, and a kind without an export rule is refused, in
// internal/onnx's tests.)
func TestCLIExportONNX(t *testing.T) {
	dir := t.TempDir()
	fox, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "fox"))
	r := cli(t, dir, "export", "--format", "onnx", "--run", fox, "--out", "fox.onnx")
	if r.code != 0 || !strings.Contains(r.stdout, "opset 17") {
		t.Fatalf("export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	full, err := os.ReadFile(filepath.Join(dir, "fox.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if r := cli(t, dir, "export", "--format", "onnx", "--run", fox, "--out", "fox.onnx"); r.code != 1 || !strings.Contains(r.stderr, "not overwriting") {
		t.Errorf("export over an existing file: exit %d, stderr %q", r.code, r.stderr)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "fox.onnx")); !bytes.Equal(again, full) {
		t.Error("the existing file changed")
	}
	if r := cli(t, dir, "export", "--format", "onnx", "--dtype", "f16", "--run", fox, "--out", "fox16.onnx"); r.code != 0 {
		t.Fatalf("export --dtype f16: exit %d\n%s", r.code, r.stderr)
	}
	half, _ := os.ReadFile(filepath.Join(dir, "fox16.onnx"))
	if len(half) > len(full)*6/10 {
		t.Errorf("f16 file %d bytes, f32 %d", len(half), len(full))
	}
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err == nil {
		t.Error("a byte-level model got a tokenizer.json")
	}

	// A model reading text through a tokenizer.
	text := strings.Repeat("the quick brown fox jumps over the lazy dog\n", 50)
	os.WriteFile(filepath.Join(dir, "t.txt"), []byte(text), 0o644)
	if r := cli(t, dir, "tokenizer", "train", "--data", "t.txt", "--vocab-size", "300", "--out", "tok.json"); r.code != 0 {
		t.Fatalf("tokenizer train: exit %d\n%s", r.code, r.stderr)
	}
	cfg := strings.NewReplacer(`"vocab_size": 256`, `"vocab_size": 300, "tokenizer": "tok.json"`, `"mixer": {"kind": "full"}`, `"mixer": {"kind": "aft_simple"}`).Replace(trainCfg)
	os.WriteFile(filepath.Join(dir, "bpe.json"), []byte(cfg), 0o644)
	if r := cli(t, dir, "train", "--config", "bpe.json", "--data", "t.txt", "--out", "bpe"); r.code != 0 {
		t.Fatalf("train bpe: exit %d\n%s", r.code, r.stderr)
	}
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	if r := cli(t, dir, "export", "--format", "onnx", "--run", "bpe", "--out", filepath.Join("out", "bpe.onnx")); r.code != 0 {
		t.Fatalf("export bpe: exit %d\n%s", r.code, r.stderr)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "bpe", "tokenizer.json"))
	if got, err := os.ReadFile(filepath.Join(dir, "out", "tokenizer.json")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("tokenizer.json beside the file: %v (equal to the run's: %v)", err, bytes.Equal(got, want))
	}
	for _, args := range [][]string{
		{"export", "--format", "onnx", "--dtype", "bf16", "--run", fox, "--out", "x.onnx"},
		{"export", "--format", "tflite", "--run", fox, "--out", "x"},
	} {
		checkUsageError(t, cli(t, dir, args...), args, args[len(args)-5])
	}
}
