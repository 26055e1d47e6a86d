package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/safetensors"
)

// SaveTrainer writes the checkpoint of tr at st.Step: its weights, its
// optimizer state and st (see Save).
func (d *Dir) SaveTrainer(tr *model.Trainer[float32], st State, keep int) error {
	wb, err := tr.Model.WeightsFile().Bytes()
	if err != nil {
		return err
	}
	ob, err := tr.OptimFile().Bytes()
	if err != nil {
		return err
	}
	return d.Save(st, []CkptFile{{WeightsName, wb}, {OptimName, ob}}, keep)
}

// Restore loads the checkpoint at step into tr (built from this run's
// config) and returns its state.
func (d *Dir) Restore(tr *model.Trainer[float32], step int) (State, error) {
	st, err := d.ReadState(step)
	if err != nil {
		return st, err
	}
	dir := d.CkptPath(step)
	wf, err := safetensors.ReadFile(filepath.Join(dir, WeightsName))
	if err != nil {
		return st, fmt.Errorf("run: %w", err)
	}
	if err := tr.Model.LoadWeights(wf); err != nil {
		return st, fmt.Errorf("run: %s: %w", filepath.Join(dir, WeightsName), err)
	}
	of, err := safetensors.ReadFile(filepath.Join(dir, OptimName))
	if err != nil {
		return st, fmt.Errorf("run: %w", err)
	}
	if err := tr.LoadOptim(of); err != nil {
		return st, fmt.Errorf("run: %s: %w", filepath.Join(dir, OptimName), err)
	}
	if tr.Opt.Step != st.Step {
		return st, fmt.Errorf("run: %s: optimizer step %d, state step %d", dir, tr.Opt.Step, st.Step)
	}
	return st, nil
}

// ModelFiles returns the config and weights files of a model directory:
// for a run directory, config.json and the newest checkpoint's weights
// (step ≥ 0 picks that checkpoint instead); for an exported model,
// config.json and weights.safetensors beside it.
func ModelFiles(path string, step int) (config, weights string, err error) {
	config = filepath.Join(path, ConfigName)
	if _, err := os.Stat(filepath.Join(path, InfoName)); errors.Is(err, os.ErrNotExist) {
		if step >= 0 {
			return "", "", fmt.Errorf("run: %s is an exported model, it has no checkpoint %d", path, step)
		}
		return config, filepath.Join(path, WeightsName), nil
	}
	d, err := Open(path)
	if err != nil {
		return "", "", err
	}
	if step < 0 {
		if step, err = d.Latest(); err != nil {
			return "", "", err
		}
		if step < 0 {
			return "", "", fmt.Errorf("run: %s has no complete checkpoint yet", path)
		}
	} else if _, err := os.Stat(d.CkptPath(step)); err != nil {
		steps, _ := d.Checkpoints()
		return "", "", fmt.Errorf("run: %s has no checkpoint %d (it has %v)", path, step, steps)
	}
	return config, filepath.Join(d.CkptPath(step), WeightsName), nil
}

// LoadModel builds the model stored at path, a run directory or an
// exported model (ModelFiles), with its weights loaded.
func LoadModel(path string, step int) (*model.Model[float32], error) {
	cfgPath, wPath, err := ModelFiles(path, step)
	if err != nil {
		return nil, err
	}
	cfg, err := model.LoadConfig(cfgPath)
	if err != nil {
		return nil, err
	}
	m, err := model.New[float32](cfg)
	if err != nil {
		return nil, err
	}
	wf, err := safetensors.ReadFile(wPath)
	if err != nil {
		return nil, err
	}
	if err := m.LoadWeights(wf); err != nil {
		return nil, fmt.Errorf("%s: %w", wPath, err)
	}
	return m, nil
}

// Export writes the model stored at src (a run directory's checkpoint at
// step, −1 for the newest, or an exported model) to the new directory dst:
// config.json and weights.safetensors only, in float32 or, with bf16, each
// weight rounded to bfloat16. dst is written under a temporary name and
// renamed, so it is complete or absent; Export fails if dst exists.
func Export(src string, step int, dst string, bf16 bool) error {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("export: %s already exists", dst)
	}
	cfgPath, _, err := ModelFiles(src, step)
	if err != nil {
		return err
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		return err
	}
	m, err := LoadModel(src, step)
	if err != nil {
		return err
	}
	labels, step, err := modelMeta(src, step)
	if err != nil {
		return err
	}
	wf := m.WeightsFile()
	if bf16 {
		wf = safetensors.New()
		for i, s := range m.Specs {
			wf.SetBF16(s.Name, s.Shape, m.ParamAt(i))
		}
	}
	if err := setExportedMeta(wf, labels, step); err != nil {
		return err
	}
	wb, err := wf.Bytes()
	if err != nil {
		return err
	}
	tmp := dst + tmpPrefix + "export"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	for _, f := range []CkptFile{{ConfigName, cfg}, {WeightsName, wb}} {
		if err := writeFileSync(filepath.Join(tmp, f.Name), f.Data); err != nil {
			return err
		}
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dst))
}

// Metadata keys of an exported model's weights.safetensors: what run.json
// and the checkpoint's name say in a run directory.
const (
	metaLabels = "tokenmix.label_names" // JSON array of strings
	metaStep   = "tokenmix.step"        // decimal
)

// modelMeta returns the label names and the checkpoint step of the model
// at path (step −1: the newest), a run directory or an exported model.
func modelMeta(path string, step int) ([]string, int, error) {
	d, err := Open(path)
	if errors.Is(err, os.ErrNotExist) {
		wf, err := safetensors.ReadFile(filepath.Join(path, WeightsName))
		if err != nil {
			return nil, 0, err
		}
		return ExportedMeta(wf)
	}
	if err != nil {
		return nil, 0, err
	}
	if step < 0 {
		if step, err = d.Latest(); err != nil {
			return nil, 0, err
		}
	}
	return d.Info.LabelNames, step, nil
}

func setExportedMeta(wf *safetensors.File, labels []string, step int) error {
	if labels != nil {
		b, err := json.Marshal(labels)
		if err != nil {
			return err
		}
		wf.Metadata[metaLabels] = string(b)
	}
	wf.Metadata[metaStep] = strconv.Itoa(step)
	return nil
}

// ExportedMeta reads the label names (nil when absent) and the training
// step (0 when absent) that Export stores in an exported model's weights.
func ExportedMeta(wf *safetensors.File) (labels []string, step int, err error) {
	if s, ok := wf.Metadata[metaLabels]; ok {
		if err := json.Unmarshal([]byte(s), &labels); err != nil {
			return nil, 0, fmt.Errorf("metadata %s: %v", metaLabels, err)
		}
	}
	if s, ok := wf.Metadata[metaStep]; ok {
		if step, err = strconv.Atoi(s); err != nil || step < 0 {
			return nil, 0, fmt.Errorf("metadata %s: %q is not a step", metaStep, s)
		}
	}
	return labels, step, nil
}
