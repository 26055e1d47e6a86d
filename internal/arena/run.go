package arena

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/optim"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/internal/safetensors"
	"github.com/tokenmix/tokenmix/internal/version"
)

// ErrInterrupted is returned when a run stops on its context; its checkpoint
// is saved and the next arena call with the same directory resumes it.
var ErrInterrupted = errors.New("interrupted")

// job is one mixer's training run.
type job struct {
	kind   string
	task   data.Task
	info   data.Info
	preset *Preset
	causal bool
	budget Budget
	dir    string // run directory (result, checkpoint)
	note   string // added to the result's note
	prog   Progress
}

// ckptState is the JSON part of a run checkpoint.
type ckptState struct {
	Step         int          `json:"step"`
	PlannedSteps int          `json:"planned_steps"`
	TrainSeconds float64      `json:"train_s"`
	TrainTokens  int64        `json:"train_tokens"`
	AdamStep     int          `json:"adam_step"`
	WallSeconds  float64      `json:"wall_s"` // of the run so far, across resumptions
	Curve        []CurvePoint `json:"curve"`
	Version      string       `json:"version"` // of the build that wrote it
}

// train runs one mixer: build, train to the budget (resuming from a
// checkpoint in j.dir), evaluate on validation and test.
func (j *job) train(ctx context.Context) (res Result, err error) {
	start := time.Now()
	res = Result{Mixer: j.kind, Metric: j.info.Metric, Causal: j.causal, Threads: parallel.Threads(), Note: j.note}
	res.Options, _ = j.preset.MixerOpts(j.kind, j.info.MaxLen)
	planned := j.budget.Steps
	if planned == 0 {
		planned = unplanned // set after calibration
	}
	var st ckptState
	resumed := false
	if err := readJSON(filepath.Join(j.dir, "ckpt.json"), &st); err == nil {
		planned, resumed = st.PlannedSteps, true
	}
	cfgJSON, err := j.preset.ModelJSON(j.kind, j.info, j.causal, max(planned, 1))
	if err != nil {
		return res, err
	}
	cfg, err := model.ParseConfig(cfgJSON)
	if err != nil {
		return res, err
	}
	tc := cfg.Train
	if err := os.MkdirAll(j.dir, 0o755); err != nil {
		return res, err
	}
	if err := os.WriteFile(filepath.Join(j.dir, "config.json"), cfgJSON, 0o644); err != nil {
		return res, err
	}
	m, err := model.New[float32](cfg)
	if err != nil {
		return res, err
	}
	m.Init(tc.Seed)
	m.Seed = tc.Seed
	sizes := make([]int, len(m.Specs))
	noDecay := make([]bool, len(m.Specs))
	for i, s := range m.Specs {
		sizes[i], noDecay[i] = s.Size(), s.NoDecay
	}
	opt := optim.NewAdamW[float32](len(m.Params), optim.Groups(sizes, noDecay), tc.Beta1, tc.Beta2, tc.Eps, tc.WeightDecay)
	if resumed {
		if err := loadCheckpoint(filepath.Join(j.dir, "ckpt.safetensors"), m, opt); err != nil {
			return res, fmt.Errorf("resume: %w", err)
		}
		opt.Step = st.AdamStep
	}
	res.Params = m.NumParams()
	plan := m.Plan(tc.BatchSize, j.info.MaxLen)
	res.PlannedBytes = plan.Bytes() + m.ParamBytes()

	// One forward at the longest batch sizes the activation slabs once, so
	// batches of growing length do not reallocate them (and leave garbage
	// that raises the peak memory above the plan).
	if _, err := m.Forward(make([]int32, tc.BatchSize*j.info.MaxLen), nil, tc.BatchSize, j.info.MaxLen); err != nil {
		return res, err
	}
	loader := data.NewLoader(j.task, data.Train, tc.BatchSize, true, tc.Seed, 0).Bucket(j.preset.Bucket)
	loader.Seek(st.Step)
	var b data.Batch
	sched := optim.Schedule{LR: tc.LR, MinLR: tc.MinLR, Warmup: tc.Warmup, Steps: planned}
	deadline := time.Duration(math.MaxInt64)
	if j.budget.Duration > 0 {
		deadline = j.budget.Duration
	}
	trainTime := time.Duration(st.TrainSeconds * float64(time.Second))
	priorWall := st.WallSeconds
	tokens := st.TrainTokens
	var lossSum float64
	var lossN int
	pace := pacer{budget: j.budget.Duration}
	j.prog.Start(j.kind, planned, st.Step)
	step := st.Step
	save := func() error {
		st = ckptState{Step: step, PlannedSteps: planned, TrainSeconds: trainTime.Seconds(),
			TrainTokens: tokens, AdamStep: opt.Step, Curve: st.Curve,
			WallSeconds: priorWall + time.Since(start).Seconds()}
		return saveCheckpoint(j.dir, m, opt, &st)
	}
	for step < planned && trainTime < deadline {
		if ctx.Err() != nil {
			j.prog.Finish()
			if err := save(); err != nil {
				return res, err
			}
			return res, ErrInterrupted
		}
		t0 := time.Now()
		loader.Next(&b)
		m.Step = step
		m.ZeroGrad()
		loss, err := m.Forward(b.Tokens, b.Targets, b.B, b.T)
		if err != nil {
			return res, err
		}
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return res, fmt.Errorf("diverged: loss %v at step %d", loss, step)
		}
		m.Backward()
		if tc.GradClip > 0 {
			optim.ClipGradNorm(m.Grads, tc.GradClip)
		}
		opt.Update(m.Params, m.Grads, sched.At(step))
		dt := time.Since(t0)
		trainTime += dt
		tokens += int64(b.B * b.T)
		step++
		lossSum += loss
		lossN++
		// A duration budget becomes a step count once a few steps are
		// timed, and is replanned after every step from then on.
		if j.budget.Duration > 0 {
			if n := pace.plan(step, dt, trainTime); n > 0 && n != planned {
				planned, sched.Steps = n, n
				j.prog.SetTotal(planned)
			}
		}
		if step%tc.LogEvery == 0 || step == planned {
			pt := CurvePoint{Step: step, TrainLoss: lossSum / float64(lossN)}
			lossSum, lossN = 0, 0
			if tc.EvalEvery > 0 && (step%tc.EvalEvery == 0 || step == planned) {
				vl, vm := evaluate(m, j.task, data.Val, tc.BatchSize, tc.EvalBatches, 0)
				pt.ValLoss, pt.Val, pt.HasVal = vl, vm, true
			}
			st.Curve = append(st.Curve, pt)
		}
		j.prog.Update(step, loss, float64(tokens)/trainTime.Seconds())
		if tc.CheckpointEvery > 0 && step%tc.CheckpointEvery == 0 && step < planned {
			if err := save(); err != nil {
				return res, err
			}
		}
	}
	j.prog.Finish()
	if err := save(); err != nil {
		return res, err
	}
	res.Steps, res.PlannedSteps = step, planned
	if j.budget.Duration > 0 && step < planned {
		res.Note = joinNote(res.Note, fmt.Sprintf("time budget hit at step %d of %d", step, planned))
	}
	res.TrainTokens, res.TrainSeconds = tokens, trainTime.Seconds()
	if trainTime > 0 && step > 0 {
		res.TokensPerSec = float64(tokens) / trainTime.Seconds()
		res.MsPerStep = 1000 * trainTime.Seconds() / float64(step)
	}
	// The validation metric is the last curve point's (eval_batches
	// batches), or one such evaluation now.
	res.Val = math.NaN()
	for _, c := range st.Curve {
		if c.HasVal {
			res.Val = c.Val
		}
	}
	if math.IsNaN(res.Val) {
		_, res.Val = evaluate(m, j.task, data.Val, tc.BatchSize, tc.EvalBatches, 0)
	}
	limit := 0
	if j.preset.TestExamples > 0 {
		limit = (j.preset.TestExamples + tc.BatchSize - 1) / tc.BatchSize
	}
	res.TestLoss, res.Test = evaluate(m, j.task, data.Test, tc.BatchSize, limit, j.preset.Bucket)
	res.Curve = st.Curve
	res.Status = StatusDone
	res.WallSeconds = priorWall + time.Since(start).Seconds()
	return res, nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// evaluate returns the mean cross-entropy (nats per target) and the task
// metric over the first maxBatches batches of split s (0 = all of it).
// bucket > 1 visits a whole split in order of length (less padding); a
// capped evaluation always takes the first examples by index.
func evaluate(m *model.Model[float32], task data.Task, s data.Split, batch, maxBatches, bucket int) (loss, metric float64) {
	info := task.Info()
	l := data.NewLoader(task, s, batch, false, 0, 0)
	if maxBatches == 0 {
		l.Bucket(bucket)
	}
	var b data.Batch
	var sum float64
	var n, correct int
	for k := 0; (maxBatches == 0 || k < maxBatches) && l.Next(&b); k++ {
		ls, err := m.Forward(b.Tokens, b.Targets, b.B, b.T)
		if err != nil {
			panic(err) // the training batches passed the same checks
		}
		nt := b.NumTargets()
		sum += ls * float64(nt)
		n += nt
		logits := m.Logits()
		V := len(logits) / len(b.Targets)
		for i, t := range b.Targets {
			if t >= 0 && argmax(logits[i*V:(i+1)*V]) == int(t) {
				correct++
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	loss = sum / float64(n)
	if info.Metric == data.BitsPerByte {
		return loss, loss / math.Ln2
	}
	return loss, float64(correct) / float64(n)
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// saveCheckpoint writes the weights (contract names), the AdamW moments
// ("optim.m.<name>", "optim.v.<name>") and the JSON state, each file
// replaced atomically.
func saveCheckpoint(dir string, m *model.Model[float32], opt *optim.AdamW[float32], st *ckptState) error {
	f := safetensors.New()
	for i, s := range m.Specs {
		lo, hi := m.Offsets[i], m.Offsets[i]+s.Size()
		f.SetF32(s.Name, s.Shape, m.Params[lo:hi])
		f.SetF32("optim.m."+s.Name, s.Shape, opt.M[lo:hi])
		f.SetF32("optim.v."+s.Name, s.Shape, opt.V[lo:hi])
	}
	p := filepath.Join(dir, "ckpt.safetensors")
	if err := f.WriteFile(p + ".tmp"); err != nil {
		return err
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		return err
	}
	st.Version = version.Get().String()
	return writeJSON(filepath.Join(dir, "ckpt.json"), st)
}

func loadCheckpoint(path string, m *model.Model[float32], opt *optim.AdamW[float32]) error {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return err
	}
	for i, s := range m.Specs {
		lo, hi := m.Offsets[i], m.Offsets[i]+s.Size()
		for _, t := range []struct {
			name string
			dst  []float32
		}{{s.Name, m.Params[lo:hi]}, {"optim.m." + s.Name, opt.M[lo:hi]}, {"optim.v." + s.Name, opt.V[lo:hi]}} {
			v, _, err := f.F32(t.name)
			if err != nil {
				return err
			}
			if len(v) != len(t.dst) {
				return fmt.Errorf("%s: %d values, want %d", t.name, len(v), len(t.dst))
			}
			copy(t.dst, v)
		}
	}
	return nil
}
