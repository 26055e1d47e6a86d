// Package train is tokenmix's one training loop. `tokenmix train` and every
// arena run call Run: batches from a Source, model.Trainer steps (forward,
// backward, clipping, AdamW on the warmup + cosine schedule), a step or
// training-time budget, metrics lines, evaluation, progress, and
// checkpoints in a run directory (package run) that resume bit for bit;
// with train.pretrain, a self-pretraining stage first (pretrain.go); with
// train.curriculum, shorter sequences first (Curriculum, a Source).
package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/run"
)

// ErrInterrupted is returned by Run when its context was cancelled: the
// current step finished and a checkpoint was saved, so Run with the same
// run directory resumes.
var ErrInterrupted = errors.New("interrupted")

// Source yields the training batches, in a reproducible order where
// State and Restore can say where it stands.
type Source interface {
	// Next fills b with the next training batch. io.EOF says the data has
	// ended (a stream's): Run stops there with a checkpoint. Another
	// error stops Run without one.
	Next(b *data.Batch) error
	// State returns the source's position and RNG state after the batches
	// drawn so far, for a checkpoint; nil when the step alone determines it.
	State() (json.RawMessage, error)
	// Restore positions the source for a run resumed after step updates,
	// from what State returned then.
	Restore(step int, state json.RawMessage) error
}

// Options configure Run.
type Options struct {
	// Steps is the planned number of updates (of fine-tuning, after a
	// train.pretrain stage, which plans its own). With Duration, it is the
	// plan until the pace is known (0 for none).
	Steps int
	// Duration, when positive, is a training-time budget: the planned
	// number of updates, and with it the learning-rate schedule, follow the
	// pace (see pacer), and training stops when the time is spent.
	Duration time.Duration
	// Cap, when positive, stops training once that much training time is
	// spent, without re-planning: the schedule still follows Steps (a
	// time cap on a step budget, so a run that is too slow for its
	// budget ends within a preset's wall time).
	Cap time.Duration
	// SkipNonFinite is how many steps with a non-finite loss or gradient
	// norm Run skips (no update; the batch is passed over and the skip is
	// a metrics line) before it stops on one.
	SkipNonFinite int
	// Eval returns the validation metrics merged into the metrics line of
	// an evaluation step (every train.eval_every steps, and the last);
	// nil: none. Metrics lines are written every train.log_every steps,
	// at evaluation steps and at the last step.
	Eval func() (map[string]any, error)
	// Extra returns more fields for every metrics line; nil: none.
	Extra func() map[string]any
	// Progress reports the steps (nil: nothing); Name labels them.
	Progress Progress
	Name     string
	// Report, when set, is called after every update with its numbers,
	// and after an evaluation with its metrics.
	Report func(Report)
	// ContinueOnSaveError makes a checkpoint that cannot be written (a
	// full disk, an I/O error) a note and a metrics line ("save_error")
	// rather than the end of the run: training goes on and the next
	// checkpoint tries again. The last checkpoint of a stage (at the end
	// of the run or of a train.pretrain stage) or of an interrupted run
	// must be written either way: its failure is Run's error.
	ContinueOnSaveError bool
}

// Report is one update's numbers, for Options.Report.
type Report struct {
	Stage                            string // run.StagePretrain or run.StageTrain
	Step, Planned                    int    // the stage's updates done and planned
	Loss, LR, GradNorm, TokensPerSec float64
	// Eval is the evaluation's metrics at an evaluation step, else nil.
	Eval map[string]any
}

// Result summarises a finished Run. With a pretraining stage, Steps,
// Planned, Tokens and TrainSeconds are the fine-tuning stage's, and the
// run's step count is PretrainSteps+Steps.
type Result struct {
	Steps, Planned int
	Tokens         int64
	TrainSeconds   float64 // in steps only, across resumptions
	WallSeconds    float64 // across resumptions and stages
	Resumed        bool    // Run continued from a checkpoint
	LastEval       map[string]any
	// SetAside says, per damaged checkpoint moved aside before resuming,
	// what was wrong and where it went.
	SetAside []string
	// PretrainSteps is the updates of the pretraining stage (train.pretrain),
	// done so far; 0 without one.
	PretrainSteps int
	// DataEnded says the source's data ended (io.EOF) before the plan.
	DataEnded bool
}

// RunSteps is the run's step count: the updates of both stages.
func (r Result) RunSteps() int { return r.PretrainSteps + r.Steps }

// Run trains tr on the batches of src until the budget of o is spent,
// writing metrics lines and checkpoints (train.checkpoint_every, and at the
// end) to d, keeping train.keep_checkpoints of them. If d holds a
// checkpoint, Run first restores it into tr and src and drops the metrics
// lines logged after it; tr must be freshly built (and initialised) from
// d's config. A cancelled ctx stops Run after the current step with a
// checkpoint and ErrInterrupted. A step whose loss or gradient norm is not
// finite updates nothing; past Options.SkipNonFinite of them, Run stops
// with ErrNonFinite naming the step, the first non-finite tensor
// (Model.Diagnose) and the batch's data position, without saving. The metrics lines logged after the checkpoint resumed from (all of
// them without one) are dropped first. A checkpoint that cannot be written
// stops Run with a *SaveError naming its path, the free space and the
// newest checkpoint, which is the one before; with
// Options.ContinueOnSaveError, only the last one does.
//
// With train.pretrain, Run first runs the pretraining stage: a model of
// tr's config with the head pretrain_head (model.Config.PretrainStage),
// initialised from train.seed, trains train.pretrain.steps updates on the
// pretraining batches made from src's (no evaluation, no Extra; Cap
// applies, Duration does not). Then tr's model takes its body
// (Model.AdoptBody), its head freshly initialised, and the fine-tuning
// stage runs as Run without pretraining does, with tr's fresh optimizer,
// from the run step the first stage reached. Every metrics line has
// "stage"; a checkpoint's state records its stage, so a run resumes in
// the stage it stopped in.
func Run(ctx context.Context, d *run.Dir, tr *model.Trainer[float32], src Source, o Options) (Result, error) {
	tc := tr.Model.Config.Train
	start := time.Now()
	res := Result{Planned: o.Steps}
	// A newest checkpoint that no longer matches its checksums is moved
	// aside (run.Dir.LatestGood) and the run resumes from the one before.
	latest, err := d.LatestGood(func(msg string) {
		res.SetAside = append(res.SetAside, msg)
		if o.Progress != nil {
			o.Progress.Note(msg)
		}
	})
	if err != nil {
		return res, err
	}
	var st run.State
	if latest >= 0 {
		if st, err = d.ReadState(latest); err != nil {
			return res, err
		}
	}
	if tc.Pretrain == nil && st.StageOf() != run.StageTrain {
		return res, fmt.Errorf("run: %s: checkpoint %d is from a pretraining stage, and the config has no train.pretrain", d.Path, latest)
	}
	from := stageStart{latest: latest, state: st, start: start}
	if tc.Pretrain != nil && (latest < 0 || st.StageOf() == run.StagePretrain) {
		pcfg := tr.Model.Config.PretrainStage()
		pm, err := model.New[float32](pcfg)
		if err != nil {
			return res, err
		}
		pm.Threads, pm.Cancel = tr.Model.Threads, tr.Model.Cancel
		pm.Init(tc.Seed)
		ptr := model.NewTrainer(pm)
		pb := newPretrainBatch(tr.Model.Config)
		from.stage, from.prep = run.StagePretrain, pb.make
		po := Options{Steps: tc.Pretrain.Steps, Cap: o.Cap, SkipNonFinite: o.SkipNonFinite,
			Progress: o.Progress, Name: o.Name + " pretrain", Report: o.Report, ContinueOnSaveError: o.ContinueOnSaveError}
		pres, err := runStage(ctx, d, ptr, src, po, from)
		res.PretrainSteps, res.Resumed = pres.Steps, pres.Resumed
		res.WallSeconds, res.DataEnded = pres.WallSeconds, pres.DataEnded
		if err != nil || pres.DataEnded {
			return res, err
		}
		// The switch: the pretraining head is dropped, the task head
		// initialised; the optimizer and the schedule start afresh.
		if err := tr.Model.AdoptBody(pm, tc.Seed); err != nil {
			return res, err
		}
		head := tr.Model.Config.HeadName()
		if err := d.AppendMetrics(map[string]any{"step": pres.Steps, "stage": run.StageTrain,
			"head_swap": map[string]any{"dropped": []string{model.PretrainHead + ".weight", model.PretrainHead + ".bias"},
				"initialised": []string{head + ".weight", head + ".bias"}}}); err != nil {
			return res, err
		}
		from = stageStart{latest: -1, state: run.State{Step: pres.Steps, StageStart: pres.Steps,
			WallSeconds: pres.WallSeconds}, start: time.Now()}
	}
	from.stage = run.StageTrain
	tr.Base = from.state.StageStart
	r, err := runStage(ctx, d, tr, src, o, from)
	r.PretrainSteps = from.state.StageStart
	r.Resumed = r.Resumed || res.Resumed
	r.Steps = max(r.Steps-r.PretrainSteps, 0)
	return r, err
}

// stageStart is where runStage begins: the checkpoint to restore (latest,
// its state) or, with latest −1, the state of a fresh stage; the stage's
// name, the batch preparation of a pretraining stage, and when the
// process's part of it began.
type stageStart struct {
	latest int
	state  run.State
	stage  string
	prep   func(b *data.Batch, step int) (tokens, targets []int32)
	start  time.Time
}

// runStage is the training loop of one stage. Its Result's Steps is the
// run's step count (the stage's updates plus state.StageStart); Planned,
// Tokens and TrainSeconds are the stage's.
func runStage(ctx context.Context, d *run.Dir, tr *model.Trainer[float32], src Source, o Options, from stageStart) (Result, error) {
	tc := tr.Model.Config.Train
	start := from.start
	res := Result{Planned: o.Steps}
	if o.Duration > 0 && res.Planned == 0 {
		res.Planned = Unplanned
	}
	prog := o.Progress
	if prog == nil {
		prog = quiet{}
	}
	st := from.state
	base := st.StageStart
	if from.latest >= 0 {
		var err error
		if st, err = d.Restore(tr, from.latest); err != nil {
			return res, err
		}
		if err := src.Restore(st.Step, st.Data); err != nil {
			return res, fmt.Errorf("resume: data position: %w", err)
		}
		res.Planned, res.Resumed = st.PlannedSteps, true
		if tr.Scale != nil && st.LossScale > 0 {
			tr.Scale.Scale, tr.Scale.Clean, tr.Scale.Skipped = st.LossScale, st.LossScaleClean, st.Overflows
		}
	}
	// Lines logged after the checkpoint (or, without one, at all) are
	// logged again.
	if err := d.TrimMetrics(st.Step, from.stage); err != nil {
		return res, err
	}
	res.Steps, res.Tokens, res.TrainSeconds = st.Step, st.Tokens, st.TrainSeconds
	tr.Sched.Steps = res.Planned
	deadline := time.Duration(math.MaxInt64)
	if o.Duration > 0 {
		deadline = o.Duration
	}
	if o.Cap > 0 {
		deadline = min(deadline, o.Cap)
	}
	trainTime := time.Duration(st.TrainSeconds * float64(time.Second))
	wall := func() float64 { return st.WallSeconds + time.Since(start).Seconds() }
	lossSum, lossN := st.LossSum, st.LossSteps
	skipped, overflows := 0, 0
	save := func(last bool) error {
		ds, err := src.State()
		if err != nil {
			return err
		}
		next := run.State{Step: res.Steps, PlannedSteps: res.Planned, Data: ds, Tokens: res.Tokens,
			TrainSeconds: trainTime.Seconds(), WallSeconds: wall(), LossSum: lossSum, LossSteps: lossN,
			Stage: from.stage, StageStart: base}
		if sc := tr.Scale; sc != nil {
			next.LossScale, next.LossScaleClean, next.Overflows = sc.Scale, sc.Clean, sc.Skipped
		}
		if err := d.SaveTrainer(tr, next, tc.KeepCheckpoints); err != nil {
			return saveError(d, res.Steps, last, err)
		}
		return nil
	}
	// saveOrGoOn is save at a checkpoint before the last: with
	// ContinueOnSaveError a failure is noted and training goes on.
	saveOrGoOn := func() error {
		err := save(false)
		var se *SaveError
		if !o.ContinueOnSaveError || !errors.As(err, &se) {
			return err
		}
		prog.Note(fmt.Sprintf("%v; training goes on, and the next checkpoint tries again", se))
		return d.AppendMetrics(map[string]any{"step": res.Steps, "stage": from.stage, "save_error": se.Err.Error()})
	}
	// logLine writes the metrics line of the update just done, whose
	// statistics are s, with an evaluation when eval is set.
	loggedAt := -1
	logLine := func(s model.StepStats, tps float64, eval bool) error {
		// loss is the mean over the steps since the previous line.
		rec := map[string]any{"step": res.Steps, "stage": from.stage, "loss": lossSum / float64(lossN), "lr": s.LR, "grad_norm": s.GradNorm,
			"tokens": res.Tokens, "tokens_per_s": tps, "elapsed_s": wall(), "train_s": trainTime.Seconds()}
		if sc := tr.Scale; sc != nil {
			rec["loss_scale"], rec["overflow_skips"] = sc.Scale, sc.Skipped
		}
		lossSum, lossN = 0, 0
		if eval {
			ev, err := o.Eval()
			if err != nil {
				return err
			}
			for k, v := range ev {
				rec[k] = v
			}
			res.LastEval = ev
		}
		if o.Extra != nil {
			for k, v := range o.Extra() {
				rec[k] = v
			}
		}
		loggedAt = res.Steps
		return d.AppendMetrics(rec)
	}
	var lastStats model.StepStats
	pace := pacer{budget: o.Duration}
	var b data.Batch
	prog.Start(o.Name, res.Planned, res.Steps-base)
	for res.Steps-base < res.Planned && trainTime < deadline {
		if ctx.Err() != nil {
			prog.Finish()
			res.TrainSeconds, res.WallSeconds = trainTime.Seconds(), wall()
			if err := save(true); err != nil {
				return res, err
			}
			return res, ErrInterrupted
		}
		t0 := time.Now()
		pos, err := src.State() // the data position of this step's batch
		if err != nil {
			return res, err
		}
		if err := src.Next(&b); errors.Is(err, io.EOF) {
			res.DataEnded = true
			break
		} else if err != nil {
			prog.Finish()
			return res, fmt.Errorf("training data, batch of step %d: %w", res.Steps+1, err)
		}
		tokens, targets := b.Tokens, b.Targets
		if from.prep != nil {
			tokens, targets = from.prep(&b, res.Steps)
		}
		s, err := tr.Step(tokens, targets, b.B, b.T)
		if err != nil {
			return res, err
		}
		if s.Overflow {
			// fp16's loss scale overflowed: the scale has halved; the same
			// batch is taken again, and neither the schedule nor the data
			// position moves.
			overflows++
			if overflows > maxOverflows {
				prog.Finish()
				return res, fmt.Errorf("%w at step %d: the fp16 loss scale overflowed %d steps in a row (now %g); data: %s; the run stops with its last checkpoint untouched",
					ErrNonFinite, res.Steps+1, overflows, tr.Scale.Scale, dataPosition(res.Steps, pos))
			}
			if err := src.Restore(res.Steps, pos); err != nil {
				return res, err
			}
			if err := d.AppendMetrics(map[string]any{"step": res.Steps, "stage": from.stage, "overflow_skips": tr.Scale.Skipped,
				"loss_scale": tr.Scale.Scale}); err != nil {
				return res, err
			}
			trainTime += time.Since(t0)
			continue
		}
		overflows = 0
		if s.NonFinite {
			what := fmt.Sprintf("loss %v, gradient norm %v", s.Loss, s.GradNorm)
			where := dataPosition(res.Steps, pos)
			if skipped < o.SkipNonFinite {
				skipped++
				if err := d.AppendMetrics(map[string]any{"step": res.Steps, "stage": from.stage, "skipped_nonfinite": skipped,
					"nonfinite": what, "data": where}); err != nil {
					return res, err
				}
				prog.Note(fmt.Sprintf("skipped step %d: %s (%s)", res.Steps+1, what, where))
				continue
			}
			prog.Finish()
			first, err := tr.Model.Diagnose(tokens, targets, b.B, b.T)
			if err != nil {
				return res, err
			}
			return res, fmt.Errorf("%w at step %d (%s): first non-finite value in %s; data: %s; the run stops with its last checkpoint untouched (--skip-nonfinite N passes over such steps)",
				ErrNonFinite, res.Steps+1, what, first, where)
		}
		dt := time.Since(t0)
		trainTime += dt
		k := tr.Opt.Step // the stage's updates
		res.Steps = base + k
		res.Tokens += int64(b.B * b.T)
		lossSum += s.Loss
		lossN++
		if o.Duration > 0 {
			if n := pace.plan(k, dt, trainTime); n > 0 && n != res.Planned {
				res.Planned, tr.Sched.Steps = n, n
				prog.SetTotal(n)
			}
		}
		tps := float64(res.Tokens) / trainTime.Seconds()
		last := k == res.Planned || trainTime >= deadline
		eval := o.Eval != nil && tc.EvalEvery > 0 && (k%tc.EvalEvery == 0 || last)
		if k%tc.LogEvery == 0 || last || eval {
			if err := logLine(s, tps, eval); err != nil {
				return res, err
			}
		}
		lastStats = s
		prog.Update(k, s.Loss, tps)
		if o.Report != nil {
			o.Report(Report{Stage: from.stage, Step: k, Planned: res.Planned, Loss: s.Loss, LR: s.LR,
				GradNorm: s.GradNorm, TokensPerSec: tps, Eval: evalOf(eval, res.LastEval)})
		}
		if tc.CheckpointEvery > 0 && k%tc.CheckpointEvery == 0 && !last {
			if err := saveOrGoOn(); err != nil {
				return res, err
			}
		}
	}
	if res.DataEnded && lossN > 0 && loggedAt != res.Steps {
		// The data ended: the last update's line and evaluation, as at a
		// planned last step.
		eval := o.Eval != nil && tc.EvalEvery > 0
		tps := float64(res.Tokens) / trainTime.Seconds()
		if err := logLine(lastStats, tps, eval); err != nil {
			return res, err
		}
		if o.Report != nil && eval {
			o.Report(Report{Stage: from.stage, Step: res.Steps - base, Planned: res.Planned, Loss: lastStats.Loss, LR: lastStats.LR,
				GradNorm: lastStats.GradNorm, TokensPerSec: tps, Eval: res.LastEval})
		}
	}
	prog.Finish()
	res.TrainSeconds, res.WallSeconds = trainTime.Seconds(), wall()
	return res, save(true)
}

// evalOf is ev at an evaluation step, else nil.
func evalOf(evaluated bool, ev map[string]any) map[string]any {
	if !evaluated {
		return nil
	}
	return ev
}

// maxOverflows is how many fp16 steps in a row may overflow (each halving
// the loss scale) before Run stops: past it the gradients are not finite
// at any usable scale.
const maxOverflows = 64

// ErrNonFinite is the error of a run stopped by a non-finite loss or
// gradient norm.
var ErrNonFinite = errors.New("non-finite values")

// dataPosition describes the position of the batch of step step+1 for a
// source whose State before it was pos.
func dataPosition(step int, pos json.RawMessage) string {
	if pos == nil {
		return fmt.Sprintf("the batch of step %d", step+1)
	}
	return fmt.Sprintf("the batch of step %d, drawn from source state %s", step+1, pos)
}
