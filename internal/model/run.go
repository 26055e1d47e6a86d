package model

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/safetensors"
	"github.com/tokenmix/tokenmix/internal/version"
)

// RunRecord is the JSON part of a run checkpoint: the resolved config, the
// number of updates done, the data sampler's RNG state and counters.
type RunRecord struct {
	Config   json.RawMessage `json:"config"`
	Step     int             `json:"step"`
	RNG      []byte          `json:"rng"` // math/rand/v2 PCG state (MarshalBinary), base64 in JSON
	Tokens   int64           `json:"tokens"`
	Elapsed  float64         `json:"elapsed_s"`
	Finished bool            `json:"finished"`
	Version  string          `json:"version"` // of the build that wrote it
}

// Run checkpoint files inside the checkpoint directory.
const (
	WeightsName = "weights.safetensors"
	OptimName   = "optim.safetensors"
	RecordName  = "run.json"
)

// SaveRun writes a run checkpoint to dir: the weights (safetensors, the
// contract's names), the AdamW state (safetensors "m.<name>" and
// "v.<name>", step in the metadata) and rec with Step and Config filled in.
// It writes a sibling temporary directory and renames it, so an interrupted
// save leaves the previous checkpoint intact.
func SaveRun[F kernels.Float](dir string, t *Trainer[F], rec RunRecord) error {
	m := t.Model
	cfg, err := json.Marshal(m.Config)
	if err != nil {
		return err
	}
	rec.Config, rec.Step, rec.Version = cfg, t.Opt.Step, version.Get().String()
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := m.WeightsFile().WriteFile(filepath.Join(tmp, WeightsName)); err != nil {
		return err
	}
	of := safetensors.New()
	of.Metadata["step"] = strconv.Itoa(t.Opt.Step)
	for i, s := range m.Specs {
		lo, hi := m.Offsets[i], m.Offsets[i]+s.Size()
		putTensor(of, "m."+s.Name, s.Shape, t.Opt.M[lo:hi])
		putTensor(of, "v."+s.Name, s.Shape, t.Opt.V[lo:hi])
	}
	if err := of.WriteFile(filepath.Join(tmp, OptimName)); err != nil {
		return err
	}
	rb, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, RecordName), append(rb, '\n'), 0o644); err != nil {
		return err
	}
	old := dir + ".old"
	os.RemoveAll(old)
	if _, err := os.Stat(dir); err == nil {
		if err := os.Rename(dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// ReadRunRecord reads the run record of the checkpoint in dir.
func ReadRunRecord(dir string) (RunRecord, error) {
	var rec RunRecord
	b, err := os.ReadFile(filepath.Join(dir, RecordName))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("%s: %v", filepath.Join(dir, RecordName), err)
	}
	return rec, nil
}

// LoadRun restores weights and optimiser state from the checkpoint in dir
// into t (built from the same config) and returns its run record.
func LoadRun[F kernels.Float](dir string, t *Trainer[F]) (RunRecord, error) {
	rec, err := ReadRunRecord(dir)
	if err != nil {
		return rec, err
	}
	m := t.Model
	wf, err := safetensors.ReadFile(filepath.Join(dir, WeightsName))
	if err != nil {
		return rec, err
	}
	if err := m.LoadWeights(wf); err != nil {
		return rec, err
	}
	of, err := safetensors.ReadFile(filepath.Join(dir, OptimName))
	if err != nil {
		return rec, err
	}
	step, err := strconv.Atoi(of.Metadata["step"])
	if err != nil || step != rec.Step {
		return rec, fmt.Errorf("%s: step %q does not match the run record's %d", OptimName, of.Metadata["step"], rec.Step)
	}
	for i, s := range m.Specs {
		lo, hi := m.Offsets[i], m.Offsets[i]+s.Size()
		if err := getTensor(t.Opt.M[lo:hi], of, "m."+s.Name, s.Shape); err != nil {
			return rec, fmt.Errorf("optimizer state: %w", err)
		}
		if err := getTensor(t.Opt.V[lo:hi], of, "v."+s.Name, s.Shape); err != nil {
			return rec, fmt.Errorf("optimizer state: %w", err)
		}
	}
	t.Opt.Step = rec.Step
	return rec, nil
}
