package tokenmix

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/tokenmix/tokenmix/internal/run"
)

// LoadFS is Load on the directory dir of fsys, such as an embed.FS that
// ships a model inside a binary:
//
//	//go:embed model
//	var modelFS embed.FS
//	m, err := tokenmix.LoadFS(modelFS, "model")
//
// dir is a run directory or a model written by `tokenmix export` (the
// smaller artefact to embed: config.json, weights.safetensors and any
// tokenizer.json). LoadFS copies the files Load reads (not the optimizer
// state) to a temporary directory, loads them and removes the copy; the
// options are Load's.
func LoadFS(fsys fs.FS, dir string, opts ...Option) (*Model, error) {
	if !fs.ValidPath(dir) {
		return nil, fmt.Errorf("tokenmix: LoadFS: %q is not a valid fs.FS path", dir)
	}
	if _, err := fs.Stat(fsys, path.Join(dir, run.ConfigName)); err != nil {
		return nil, fmt.Errorf("tokenmix: LoadFS: %w (not a run directory or an exported model?)", err)
	}
	tmp, err := os.MkdirTemp("", "tokenmix-loadfs-")
	if err != nil {
		return nil, fmt.Errorf("tokenmix: LoadFS: %w", err)
	}
	defer os.RemoveAll(tmp)
	err = fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
		if dir == "." {
			rel = p
			if p == "." {
				rel = ""
			}
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(tmp, filepath.FromSlash(rel)), 0o755)
		}
		if d.Name() == run.OptimName || d.Name() == run.MetricsName || !d.Type().IsRegular() {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, filepath.FromSlash(rel)), b, 0o644)
	})
	if err != nil {
		return nil, fmt.Errorf("tokenmix: LoadFS: %w", err)
	}
	return Load(tmp, opts...)
}
