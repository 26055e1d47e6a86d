package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/internal/train"
	"github.com/tokenmix/tokenmix/mixer"
)

// runTrain is `tokenmix train`: a language model on a text file or
// directory, or on JSONL lines, or a classifier on labelled JSONL lines,
// or a model of a task of the task list, through tokenmix.Train, with a
// progress line, metrics and resumable checkpoints in the run directory
// --out. Without --config, the config is inferred from the data.
func runTrain(ctx context.Context, args []string) error {
	fs := newFlags("train")
	cfgPath := fs.String("config", "", "config JSON (docs/model.md); keys it leaves out are inferred from the data or defaulted")
	dataPath := fs.String("data", "", "a .jsonl file of lines {\"text\"|\"tokens\": …} with \"label\" (a classifier) or optional \"targets\" (an lm), or else a text file or directory (an lm)")
	valPath := fs.String("val", "", "JSONL validation lines (default: hold out --val-frac of --data)")
	taskArg := fs.String("task", "", "instead of --data, a task of the task list: its name (default settings) or its JSON object, e.g. {\"name\": \"recall\", \"len\": 64}")
	out := fs.String("out", "", "run directory")
	resume := fs.Bool("resume", false, "continue the run in --out from its newest checkpoint")
	valFrac := fs.Float64("val-frac", 0.05, "fraction of the data kept for validation")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	precision := fs.String("precision", "", "a new run's precision, overriding the config's: fp32, bf16 or fp16")
	mixerKind := fs.String("mixer", "", "the mixer kind of a config without one (default full; tokenmix mixers lists them)")
	size := fs.String("size", "", "the model's shape when the config gives none: small (default) or base")
	maxMemory := maxMemoryFlag(fs, "train", "the memory budget: a run whose plan needs more is refused before it allocates")
	skipNonFinite := fs.Int("skip-nonfinite", 0, "pass over up to N steps whose loss or gradient is NaN or infinite (each a metrics line) before stopping on one")
	onSaveError := fs.String("on-save-error", "stop", "a checkpoint that cannot be written (a full disk): stop (exit 1, the checkpoint before kept) or continue (train on; the next checkpoint tries again)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*dataPath == "") == (*taskArg == "") || *out == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	if *taskArg != "" && *valPath != "" {
		return usageErr("train: --val applies to --data, not to --task (a task has its own validation split)")
	}
	for name, v := range map[string]string{"--precision": *precision, "--mixer": *mixerKind, "--size": *size} {
		if *resume && v != "" {
			return usageErr("train: %s is a new run's (a resumed run keeps its saved config)", name)
		}
	}
	if *skipNonFinite < 0 {
		return usageErr("train: --skip-nonfinite must be ≥ 0")
	}
	budget, err := maxMemory()
	if err != nil {
		return err
	}
	opts := []tokenmix.Option{tokenmix.WithOutDir(*out), tokenmix.WithSkipNonFinite(*skipNonFinite), tokenmix.WithMaxMemory(budget)}
	switch *onSaveError {
	case "stop":
	case "continue":
		opts = append(opts, tokenmix.WithContinueOnSaveError())
	default:
		return usageErr("train: --on-save-error %q: want stop or continue", *onSaveError)
	}
	if *resume {
		if _, err := run.Open(*out); err != nil {
			return fmt.Errorf("train --resume: %w", err)
		}
	} else if _, err := run.Open(*out); err == nil {
		return fmt.Errorf("train: %s already holds a run; use --resume or another --out", *out)
	}
	var cfg tokenmix.TrainConfig
	if *cfgPath != "" {
		b, err := os.ReadFile(*cfgPath)
		if err != nil {
			return err
		}
		if cfg, err = tokenmix.ParseTrainConfig(b); err != nil {
			return fmt.Errorf("%s: %w", *cfgPath, err)
		}
		// The config's tokenizer is relative to the config file.
		if cfg.Tokenizer != "" && !filepath.IsAbs(cfg.Tokenizer) {
			cfg.Tokenizer = filepath.Join(filepath.Dir(*cfgPath), cfg.Tokenizer)
		}
	}
	if *mixerKind != "" {
		if cfg.Mixer.Kind != "" {
			return usageErr("train: --mixer with a config that names its mixer (%q)", cfg.Mixer.Kind)
		}
		cfg.Mixer = mixer.OptionsOf(*mixerKind, nil)
	}
	switch *size {
	case "", "small", "base":
		cfg.Size = *size
	default:
		return usageErr("train: --size %q: want small or base", *size)
	}
	if *precision != "" {
		switch *precision {
		case "fp32", "bf16", "fp16":
			cfg.Precision = *precision
		default:
			return usageErr("train --precision: precision: must be \"fp32\", \"bf16\" or \"fp16\", got %q", *precision)
		}
	}
	var trainData, val tokenmix.Dataset
	switch {
	case *taskArg != "":
		var err error
		if trainData, val, err = tokenmix.TaskData(*taskArg); err != nil {
			return err
		}
	case strings.HasSuffix(*dataPath, ".jsonl"):
		trainData = tokenmix.JSONLFile(*dataPath)
	default:
		if *valPath != "" {
			return usageErr("train: --val applies to JSONL lines (a classifier's, or an lm's .jsonl), not to text")
		}
		trainData = tokenmix.TextFiles(*dataPath)
	}
	switch {
	case *valPath != "":
		val = tokenmix.JSONLFile(*valPath)
	case val == nil:
		trainData, val = tokenmix.HoldOut(trainData, *valFrac)
	}
	prog := newTrainProgress(os.Stderr, *out)
	r, err := tokenmix.Train(ctx, cfg, trainData, append(opts, tokenmix.WithValidation(val), tokenmix.WithProgress(prog.report))...)
	prog.finish()
	ckpt := ""
	if r != nil {
		ckpt = (&run.Dir{Path: *out}).CkptPath(r.Step())
	}
	if errors.Is(err, context.Canceled) && r != nil {
		fmt.Fprintf(os.Stderr, "interrupted at step %d; checkpoint saved in %s (continue with --resume)\n", r.Step(), ckpt)
		return context.Canceled
	}
	if se := (*train.SaveError)(nil); errors.As(err, &se) {
		hint := "continue with --resume once there is room"
		if !se.Last {
			hint += ", or use --on-save-error continue"
		}
		return trainError{fmt.Errorf("%w; %s", err, hint)}
	}
	if err != nil {
		return trainError{err}
	}
	valLoss, hasVal := r.Validation()["val_loss"]
	if *asJSON {
		res := map[string]any{"steps": r.Step() - r.PretrainSteps(), "tokens": r.Tokens(), "train_s": r.TrainTime().Seconds(), "checkpoint": ckpt}
		if r.PretrainSteps() > 0 {
			res["pretrain_steps"] = r.PretrainSteps()
		}
		if hasVal {
			res["val_loss"] = valLoss
		}
		return printJSON(res)
	}
	if n := r.PretrainSteps(); n > 0 {
		var c struct {
			Train struct{ Pretrain struct{ Objective string } }
		}
		json.Unmarshal(r.Config().JSON, &c)
		fmt.Printf("pretrained %d steps (%s); ", n, c.Train.Pretrain.Objective)
	}
	fmt.Printf("done: %d steps, %d tokens in %s", r.Step()-r.PretrainSteps(), r.Tokens(), r.TrainTime().Round(time.Second))
	if hasVal {
		fmt.Printf(", validation loss %.4f", valLoss)
	} else if v := r.Validation(); len(v) > 0 { // an embedder's retrieval
		keys := slices.Sorted(maps.Keys(v))
		for i, k := range keys {
			sep := ", "
			if i == 0 {
				sep = ", validation "
			}
			fmt.Printf("%s%s %.4f", sep, strings.TrimPrefix(k, "val_"), v[k])
		}
	}
	fmt.Printf("; checkpoint in %s\n", ckpt)
	return nil
}

// trainError is an error of tokenmix.Train as train's: "train: …"
// rather than "tokenmix: …".
type trainError struct{ err error }

func (e trainError) Error() string {
	return "train: " + strings.TrimPrefix(e.err.Error(), "tokenmix: ")
}
func (e trainError) Unwrap() error { return e.err }

// trainProgress draws tokenmix.Train's progress on the terminal (a bar)
// or as plain lines: the resolved config first, then the steps, the
// validations and the notes.
type trainProgress struct {
	w       io.Writer
	out     string
	bar     train.Progress
	stage   string
	total   int
	started bool
}

func newTrainProgress(w io.Writer, out string) *trainProgress {
	return &trainProgress{w: w, out: out, bar: train.NewProgress(w)}
}

func (p *trainProgress) report(pr tokenmix.Progress) {
	if pr.Note != "" {
		if !p.started {
			// The first note comes once the run directory holds the
			// resolved config.
			p.started = true
			if b, err := os.ReadFile(filepath.Join(p.out, run.ConfigName)); err == nil {
				fmt.Fprintf(p.w, "%s", b)
			}
			fmt.Fprintln(p.w, pr.Note)
			return
		}
		p.bar.Note(pr.Note)
		return
	}
	if pr.Stage != p.stage {
		if p.stage != "" {
			p.bar.Finish()
		}
		p.stage, p.total = pr.Stage, pr.Steps
		name := "train"
		if pr.Stage == run.StagePretrain {
			name = "train pretrain"
		}
		p.bar.Start(name, pr.Steps, pr.Step-1)
	}
	if pr.Steps != p.total {
		p.total = pr.Steps
		p.bar.SetTotal(pr.Steps)
	}
	p.bar.Update(pr.Step, pr.Loss, pr.TokensPerSec)
	if v := pr.Validation; v != nil {
		if bpb, ok := v["val_"+string(data.BitsPerByte)]; ok {
			p.bar.Note(fmt.Sprintf("step %d: validation loss %.4f (%.3f bits/byte)", pr.Step, v["val_loss"], bpb))
		} else {
			for k, m := range v {
				if k != "val_loss" {
					p.bar.Note(fmt.Sprintf("step %d: validation loss %.4f, %s %.2f%%", pr.Step, v["val_loss"], strings.TrimPrefix(k, "val_"), 100*m))
				}
			}
		}
		if pr.Mixer != nil {
			var c struct {
				NLayers int `json:"n_layers"`
			}
			if b, err := os.ReadFile(filepath.Join(p.out, run.ConfigName)); err == nil && json.Unmarshal(b, &c) == nil {
				if s := mixerStatsLine(pr.Mixer, c.NLayers); s != "" {
					p.bar.Note("  mixer: " + s)
				}
			}
		}
	}
}

func (p *trainProgress) finish() {
	if p.stage != "" {
		p.bar.Finish()
	}
}

// splitTaskArg splits a --task argument, a task list name or its JSON object,
// into the name and the other keys (data.ParseTaskArg).
func splitTaskArg(cmd, arg string) (string, map[string]json.RawMessage, error) {
	name, keys, err := data.ParseTaskArg(arg)
	if err != nil {
		return "", nil, usageErr("%s --task: %v", cmd, err)
	}
	return name, keys, nil
}

// listTask builds the task of command cmd's --task, a name or a JSON object
// {"name": …, other keys} of the task list (data.NewTask), and checks that
// cfg's model fits it (train.CheckTask).
func listTask(cmd, arg string, cfg *model.Config) (data.Task, error) {
	name, keys, err := splitTaskArg(cmd, arg)
	if err != nil {
		return nil, err
	}
	task, err := data.NewTask(name, keys, "")
	if err != nil {
		return nil, err
	}
	if err := train.CheckTask(cfg, task.Info()); err != nil {
		return nil, fmt.Errorf("%s --task %s: %w", cmd, name, err)
	}
	return task, nil
}
