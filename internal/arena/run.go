package arena

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/internal/strict"
	"github.com/tokenmix/tokenmix/internal/train"
)

// ErrInterrupted is returned when a run stops on its context; its checkpoint
// is saved and the next arena call with the same directory resumes it.
var ErrInterrupted = train.ErrInterrupted

// job is one mixer's training run.
type job struct {
	kind   string
	seed   int // index: trains with preset.Seed(seed)
	length int // the sweep's length, 0 outside a sweep
	task   data.Task
	info   data.Info
	preset *Preset
	causal bool
	budget Budget
	dir    string // run directory (package run), plus job.json and result.json
	note   string // added to the result's note
	prog   train.Progress
}

// train runs one mixer with one seed: build, train to the budget with
// train.Run (resuming from the run directory's newest checkpoint), evaluate
// on validation and test.
func (j *job) train(ctx context.Context) (res Result, err error) {
	res = Result{Mixer: j.kind, Len: j.length, Metric: j.info.Metric, Causal: j.causal, Threads: parallel.Threads(), Note: j.note}
	if res.Len == 0 {
		res.Len = j.info.MaxLen
	}
	res.Options, _ = j.preset.MixerOpts(j.kind, j.info.MaxLen)
	steps := j.budget.Steps
	if steps == 0 {
		steps = train.Unplanned // a time budget: the config's steps is a placeholder
	}
	res.Seed = j.preset.Seed(j.seed)
	cfg, err := j.preset.modelConfig(j.kind, j.info, j.causal, steps, j.seed)
	if err != nil {
		return res, err
	}
	if j.info.Tokenizer != nil {
		cfg.Tokenizer = run.TokenizerName // the run's copy
	}
	cfgJSON, err := strict.MarshalIndent(cfg)
	if err != nil {
		return res, err
	}
	d, err := run.Open(j.dir)
	if errors.Is(err, os.ErrNotExist) {
		if j.info.Tokenizer != nil {
			// Before run.json: a complete run has its tokenizer.
			if err := run.WriteTokenizer(j.dir, j.info.Tokenizer); err != nil {
				return res, err
			}
		}
		d, err = run.Create(j.dir, cfgJSON, run.Info{Task: cfg.Task, LabelNames: j.info.LabelNames})
	}
	if err != nil {
		return res, err
	}
	tc := cfg.Train
	m, err := model.New[float32](cfg)
	if err != nil {
		return res, err
	}
	m.Init(tc.Seed)
	tr := model.NewTrainer(m)
	res.Params = m.NumParams()
	need, err := model.TrainNeed(cfg, m.Threads)
	if err != nil {
		return res, err
	}
	res.PlannedBytes = need.Bytes()

	// One forward at the longest batch sizes the activation slabs once, so
	// batches of growing length do not reallocate them (and leave garbage
	// that raises the peak memory above the plan).
	if _, err := m.Forward(make([]int32, tc.BatchSize*j.info.MaxLen), nil, tc.BatchSize, j.info.MaxLen); err != nil {
		return res, err
	}
	loader := data.NewLoader(j.task, data.Train, tc.BatchSize, true, tc.Seed, 0).Bucket(j.preset.Bucket)
	src, err := train.NewCurriculum(tc, train.TaskSource{L: loader}, func(n, batch int) (train.Source, error) {
		t, err := j.preset.BuildTaskAtLen(n)
		if err != nil {
			return nil, err
		}
		return train.TaskSource{L: data.NewLoader(t, data.Train, batch, true, tc.Seed, 0).Bucket(j.preset.Bucket)}, nil
	})
	if err != nil {
		return res, err
	}
	valKey := "val_" + string(j.info.Metric)
	r, err := train.Run(ctx, d, tr, src, train.Options{
		Steps: j.budget.Steps, Duration: j.budget.Duration, Cap: j.preset.maxTrainTime(), Progress: j.prog, Name: j.name(),
		Eval: func() (map[string]any, error) {
			ev, err := train.Evaluate(m, j.task, data.Val, tc.BatchSize, tc.SeqLen, tc.EvalBatches, 0)
			return map[string]any{"val_loss": ev.Loss, valKey: ev.Metric}, err
		},
	})
	if err != nil {
		return res, err
	}
	start := time.Now()
	ms, err := d.Metrics()
	if err != nil {
		return res, err
	}
	res.Curve = curve(ms, valKey)
	res.Steps, res.PlannedSteps, res.PretrainSteps = r.Steps, r.Planned, r.PretrainSteps
	switch {
	case r.Steps >= r.Planned:
	case j.budget.Duration > 0:
		res.Note = joinNote(res.Note, fmt.Sprintf("time budget hit at step %d of %d", r.Steps, r.Planned))
	case j.preset.MaxTrainTime != "":
		res.Note = joinNote(res.Note, fmt.Sprintf("over the time budget: max_train_time %s reached at step %d of %d",
			j.preset.MaxTrainTime, r.Steps, r.Planned))
	}
	res.TrainTokens, res.TrainSeconds = r.Tokens, r.TrainSeconds
	if r.TrainSeconds > 0 && r.Steps > 0 {
		res.TokensPerSec = float64(r.Tokens) / r.TrainSeconds
		res.MsPerStep = 1000 * r.TrainSeconds / float64(r.Steps)
	}
	// The validation metric is the last curve point's (eval_batches
	// batches), or one such evaluation now.
	res.Val = math.NaN()
	for _, c := range res.Curve {
		if c.HasVal {
			res.Val = c.Val
		}
	}
	if math.IsNaN(res.Val) {
		ev, err := train.Evaluate(m, j.task, data.Val, tc.BatchSize, tc.SeqLen, tc.EvalBatches, 0)
		if err != nil {
			return res, err
		}
		res.Val = ev.Metric
	}
	limit := 0
	if j.preset.TestExamples > 0 {
		limit = (j.preset.TestExamples + tc.BatchSize - 1) / tc.BatchSize
	}
	ev, err := train.Evaluate(m, j.task, data.Test, tc.BatchSize, tc.SeqLen, limit, j.preset.Bucket)
	if err != nil {
		return res, err
	}
	res.TestLoss, res.Test, res.TestStdErr, res.TestTargets = ev.Loss, ev.Metric, ev.StdErr, ev.Targets
	res.Status = StatusDone
	res.WallSeconds = r.WallSeconds + time.Since(start).Seconds()
	return res, nil
}

// name labels the run's progress: the kind, and its length in a sweep.
func (j *job) name() string {
	if j.length > 0 {
		return fmt.Sprintf("%s T=%d", j.kind, j.length)
	}
	return j.kind
}

// curve turns the run's fine-tuning metrics lines into curve points (a
// pretraining stage's lines and the head swap's are left out).
func curve(ms []map[string]any, valKey string) []CurvePoint {
	var out []CurvePoint
	for _, m := range ms {
		if _, swap := m["head_swap"]; swap || m["stage"] == run.StagePretrain {
			continue
		}
		step, _ := m["step"].(float64)
		pt := CurvePoint{Step: int(step)}
		pt.TrainLoss, _ = m["loss"].(float64)
		pt.TrainS, _ = m["train_s"].(float64)
		if v, ok := m[valKey].(float64); ok {
			pt.Val, pt.HasVal = v, true
			pt.ValLoss, _ = m["val_loss"].(float64)
		}
		out = append(out, pt)
	}
	return out
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
