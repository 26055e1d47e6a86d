package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/safetensors"
	"github.com/tokenmix/tokenmix/tokenizer"
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
	for _, f := range []struct {
		name string
		load func(*safetensors.Reader) error
	}{
		{WeightsName, func(r *safetensors.Reader) error { return tr.Model.LoadWeights(r) }},
		{OptimName, func(r *safetensors.Reader) error { return tr.LoadOptim(r, r.Metadata) }},
	} {
		// Streamed straight into the parameters and moments.
		r, err := safetensors.OpenReader(filepath.Join(dir, f.name))
		if err != nil {
			return st, fmt.Errorf("run: %w", err)
		}
		err = f.load(r)
		r.Close()
		if err != nil {
			return st, fmt.Errorf("run: %s: %w", filepath.Join(dir, f.name), err)
		}
	}
	if tr.Opt.Step != st.Step-st.StageStart {
		return st, fmt.Errorf("run: %s: optimizer step %d, state step %d of a stage that began at step %d", dir, tr.Opt.Step, st.Step, st.StageStart)
	}
	return st, nil
}

// Stored is a model as a directory holds it: a run directory's checkpoint,
// or an exported model.
type Stored struct {
	Config      []byte // config.json as written
	ConfigPath  string
	WeightsPath string // validated by Read, streamed into the model by Model
	// Labels names a classifier's classes (run.json, or the exported
	// weights' metadata); nil when unnamed.
	Labels []string
	// Step is the training step of the weights (0 when unknown).
	Step int
	// Tokenizer is the tokenizer config.json names (tokenizer.json beside
	// it), or nil for byte-level text.
	Tokenizer *tokenizer.Tokenizer
}

// Read reads the model stored at path: for a run directory, config.json
// and the weights of the checkpoint at step (−1: the newest complete one);
// for an exported model, config.json and weights.safetensors beside it
// (step must be −1). The step is resolved once, so a run that saves
// meanwhile cannot mix two checkpoints.
func Read(path string, step int) (*Stored, error) {
	s := &Stored{ConfigPath: filepath.Join(path, ConfigName)}
	d, err := Open(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if step >= 0 {
			return nil, fmt.Errorf("run: %s is an exported model, it has no checkpoint %d", path, step)
		}
		s.WeightsPath = filepath.Join(path, WeightsName)
	case err != nil:
		return nil, err
	default:
		if step < 0 {
			if step, err = d.Latest(); err != nil {
				return nil, err
			}
			if step < 0 {
				return nil, fmt.Errorf("run: %s has no complete checkpoint yet", path)
			}
		}
		// The weights decide whether the checkpoint exists (below); a
		// readable state.json says whether it has the task's head.
		if st, err := d.ReadState(step); err == nil && st.StageOf() == StagePretrain {
			return nil, fmt.Errorf("run: %s: checkpoint %d is from the pretraining stage (train.pretrain): it has no task head yet; use a checkpoint of the fine-tuning stage", path, step)
		}
		if _, err := d.Verify(step, WeightsName); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w (tokenmix verify --run %s checks every checkpoint; train --resume moves a damaged one aside)", err, path)
		}
		s.WeightsPath = filepath.Join(d.CkptPath(step), WeightsName)
		s.Labels, s.Step = d.Info.LabelNames, step
	}
	if s.Config, err = os.ReadFile(s.ConfigPath); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	cfg, err := model.ParseConfig(s.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.ConfigPath, err)
	}
	if s.Tokenizer, err = OpenTokenizer(path, cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", s.ConfigPath, err)
	}
	// The header is validated now; the tensors are read by Model.
	wr, err := safetensors.OpenReader(s.WeightsPath)
	if errors.Is(err, os.ErrNotExist) && d != nil {
		steps, _ := d.Checkpoints()
		return nil, fmt.Errorf("run: %s has no checkpoint %d (it has %v)", path, step, steps)
	}
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	defer wr.Close()
	if d == nil {
		if s.Labels, s.Step, err = exportedMeta(wr.Metadata); err != nil {
			return nil, fmt.Errorf("run: %s: %w", s.WeightsPath, err)
		}
	}
	return s, nil
}

// Model builds the stored model with its weights, for inference: its
// products run in float32 whatever precision the run trained in (the
// weights are float32 masters in every precision); Model.UseBF16 then
// switches it to bf16 inference. Its Seed and Step are train.seed and the
// checkpoint's step, so random mixers draw what tokenmix.Load's model
// draws.
func (s *Stored) Model() (*model.Model[float32], error) {
	cfg, err := model.ParseConfig(s.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.ConfigPath, err)
	}
	cfg.Precision = "fp32"
	m, err := model.New[float32](cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.ConfigPath, err)
	}
	wr, err := safetensors.OpenReader(s.WeightsPath)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	defer wr.Close()
	if err := m.LoadWeights(wr); err != nil {
		return nil, fmt.Errorf("%s: %w", s.WeightsPath, err)
	}
	if n := len(s.Labels); n > 0 && n != cfg.NClasses {
		return nil, fmt.Errorf("%s: %d label names for n_classes %d", s.ConfigPath, n, cfg.NClasses)
	}
	// The pass seeds of random mixers (LSH's rotations) at this step.
	if cfg.Train != nil {
		m.Seed = cfg.Train.Seed
	}
	m.Step = s.Step
	return m, nil
}

// LoadModel reads (Read) and builds (Stored.Model) the model at path.
func LoadModel(path string, step int) (*model.Model[float32], error) {
	s, err := Read(path, step)
	if err != nil {
		return nil, err
	}
	return s.Model()
}

// Export writes the model stored at src (Read: a run directory's
// checkpoint at step, −1 for the newest, or an exported model) to the new
// directory dst: config.json, weights.safetensors and, for a model that
// reads text through a tokenizer, tokenizer.json only, in float32 or,
// with bf16, each weight rounded to bfloat16, with the label names and the
// step in the weights' metadata. dst is written under a temporary name and
// renamed, so it is complete or absent; Export fails if dst exists.
func Export(src string, step int, dst string, bf16 bool) error {
	dst = filepath.Clean(dst)
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("export: %s already exists", dst)
	}
	s, err := Read(src, step)
	if err != nil {
		return err
	}
	m, err := s.Model()
	if err != nil {
		return err
	}
	wf := m.WeightsFile()
	if bf16 {
		wf = safetensors.New()
		for i, sp := range m.Specs {
			wf.SetBF16(sp.Name, sp.Shape, m.ParamAt(i))
		}
	}
	if s.Labels != nil {
		b, err := json.Marshal(s.Labels)
		if err != nil {
			return err
		}
		wf.Metadata[metaLabels] = string(b)
	}
	wf.Metadata[metaStep] = strconv.Itoa(s.Step)
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
	files := []CkptFile{{ConfigName, s.Config}, {WeightsName, wb}}
	if s.Tokenizer != nil {
		var b bytes.Buffer
		if err := s.Tokenizer.WriteJSON(&b); err != nil {
			return err
		}
		files = append(files, CkptFile{TokenizerName, b.Bytes()})
	}
	for _, f := range files {
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

// exportedMeta reads the label names (nil when absent) and the training
// step (0 when absent) that Export stores in an exported model's weights.
func exportedMeta(meta map[string]string) (labels []string, step int, err error) {
	if s, ok := meta[metaLabels]; ok {
		if err := json.Unmarshal([]byte(s), &labels); err != nil {
			return nil, 0, fmt.Errorf("metadata %s: %v", metaLabels, err)
		}
	}
	if s, ok := meta[metaStep]; ok {
		if step, err = strconv.Atoi(s); err != nil || step < 0 {
			return nil, 0, fmt.Errorf("metadata %s: %q is not a step", metaStep, s)
		}
	}
	return labels, step, nil
}
