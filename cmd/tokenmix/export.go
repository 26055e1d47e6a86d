package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tokenmix/tokenmix/internal/onnx"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/internal/version"
)

// runExport is `tokenmix export`: a run's weights and config, without the
// optimizer state, as the small artefact to ship: a model directory, or
// with --format onnx one ONNX file (docs/onnx.md).
func runExport(ctx context.Context, args []string) error {
	fs := newFlags("export")
	src := fs.String("run", "", "run directory (or an exported model)")
	out := fs.String("out", "", "new directory for config.json and weights.safetensors, or with --format onnx the new .onnx file")
	format := fs.String("format", "dir", "dir (a model directory) or onnx (one ONNX file; a tokenizer.json beside it when the model has one)")
	dtype := fs.String("dtype", "f32", "weight type: f32, or bf16 (dir) or f16 (onnx), half the size, each weight rounded")
	step := fs.Int("checkpoint", -1, "the checkpoint of the run to export (default: the newest)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *src == "" || *out == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	switch *format {
	case "dir":
		if *dtype != "f32" && *dtype != "bf16" {
			return usageErr("export: --dtype: want f32 or bf16, got %q", *dtype)
		}
		if err := run.Export(*src, *step, *out, *dtype == "bf16"); err != nil {
			return err
		}
		fmt.Printf("wrote %s (config.json, weights.safetensors in %s)\n", *out, *dtype)
		return nil
	case "onnx":
		if *dtype != "f32" && *dtype != "f16" {
			return usageErr("export --format onnx: --dtype: want f32 or f16, got %q", *dtype)
		}
		return exportONNX(*src, *step, *out, *dtype == "f16")
	}
	return usageErr("export: --format: want dir or onnx, got %q", *format)
}

// exportONNX writes the model stored at src as the new ONNX file out and,
// for a model that reads text through a tokenizer, tokenizer.json beside
// it, and for weights past protobuf's 2 GiB limit out + ".data". None may
// exist yet; each file is written under a temporary name and renamed.
func exportONNX(src string, step int, out string, f16 bool) error {
	s, err := run.Read(src, step)
	if err != nil {
		return err
	}
	m, err := s.Model()
	if err != nil {
		return err
	}
	meta := map[string]string{"tokenmix.config": string(s.Config)}
	if s.Step > 0 {
		meta["tokenmix.step"] = strconv.Itoa(s.Step)
	}
	if len(s.Labels) > 0 {
		b, _ := json.Marshal(s.Labels)
		meta["tokenmix.label_names"] = string(b)
	}
	f, err := onnx.Export(m, onnx.Options{F16: f16, Version: version.Get().String(), Meta: meta, DataName: filepath.Base(out) + ".data"})
	if err != nil {
		return err
	}
	tokPath := filepath.Join(filepath.Dir(out), run.TokenizerName)
	dataPath := filepath.Join(filepath.Dir(out), f.DataName)
	for _, p := range []string{out, tokPath, dataPath} {
		if p == tokPath && s.Tokenizer == nil || p == dataPath && f.Data == nil {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("export: %s exists; not overwriting it", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if s.Tokenizer != nil {
		if err := run.WriteTokenizer(filepath.Dir(out), s.Tokenizer); err != nil {
			return err
		}
	}
	if f.Data != nil { // first: the model file refers to it
		if err := writeFileAtomic(dataPath, func(w io.Writer) error { _, err := w.Write(f.Data); return err }); err != nil {
			return err
		}
	}
	if err := writeFileAtomic(out, func(w io.Writer) error { _, err := w.Write(f.Model); return err }); err != nil {
		return err
	}
	dt := "float32"
	if f16 {
		dt = "float16"
	}
	fmt.Printf("wrote %s (ONNX IR %d, opset %d, %s weights, %d bytes)\n", out, onnx.IRVersion, onnx.Opset, dt, len(f.Model))
	if f.Data != nil {
		fmt.Printf("wrote %s (the weights as external data, %d bytes)\n", dataPath, len(f.Data))
	}
	return nil
}
