package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/run"
	"github.com/tokenmix/tokenmix/internal/train"
	"github.com/tokenmix/tokenmix/tokenizer"
)

// runTrain is `tokenmix train`: a byte-level language model on a text file
// or directory (task "lm"), or a classifier on JSONL lines (task
// "classify"), with a progress line, metrics and resumable checkpoints in
// the run directory --out (package run; train.Run is the loop).
func runTrain(ctx context.Context, args []string) error {
	fs := newFlags("train")
	cfgPath := fs.String("config", "", "model config JSON; its \"train\" object sets the run (defaults otherwise)")
	dataPath := fs.String("data", "", "lm: a text file or directory (bytes; vocab_size ≥ 256), or a .jsonl file of lines {\"text\"|\"tokens\": …, \"targets\": …}; classify: JSONL lines {\"text\"|\"tokens\": …, \"label\": …}")
	valPath := fs.String("val", "", "JSONL validation lines (default: hold out --val-frac of --data)")
	taskArg := fs.String("task", "", "instead of --data, a task of the task list: its name (default settings) or its JSON object, e.g. {\"name\": \"recall\", \"len\": 64}")
	out := fs.String("out", "", "run directory")
	resume := fs.Bool("resume", false, "continue the run in --out from its newest checkpoint")
	valFrac := fs.Float64("val-frac", 0.05, "fraction of the data kept for validation")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	precision := fs.String("precision", "", "a new run's precision, overriding the config's: fp32, bf16 or fp16")
	skipNonFinite := fs.Int("skip-nonfinite", 0, "pass over up to N steps whose loss or gradient is NaN or infinite (each a metrics line) before stopping on one")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*dataPath == "") == (*taskArg == "") || *out == "" || (*cfgPath == "" && !*resume) || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	if *taskArg != "" && *valPath != "" {
		return usageErr("train: --val applies to --data, not to --task (a task has its own validation split)")
	}
	if *resume && *precision != "" {
		return usageErr("train: --precision is a new run's (a resumed run keeps its saved config)")
	}
	if *skipNonFinite < 0 {
		return usageErr("train: --skip-nonfinite must be ≥ 0")
	}
	var cfg *model.Config
	var d *run.Dir
	var err error
	if *resume {
		if d, err = run.Open(*out); err != nil {
			return fmt.Errorf("train --resume: %w", err)
		}
		if cfg, err = model.ParseConfig(d.Config); err != nil {
			return fmt.Errorf("train --resume: %s: %w", filepath.Join(*out, run.ConfigName), err)
		}
		if *cfgPath != "" {
			c2, err := model.LoadConfig(*cfgPath)
			if err != nil {
				return err
			}
			if c2.Train == nil {
				c2.Train = model.DefaultTrainConfig(c2)
			}
			if c2.Tokenizer != "" { // the run keeps its copy
				c2.Tokenizer, c2.TokenizerPattern = cfg.Tokenizer, cfg.TokenizerPattern
			}
			a, _ := json.Marshal(cfg)
			b, _ := json.Marshal(c2)
			if string(a) != string(b) {
				return fmt.Errorf("train --resume: --config differs from the run's saved config (drop --config to resume with the saved one)")
			}
		}
	} else {
		if _, err := run.Open(*out); err == nil {
			return fmt.Errorf("train: %s already holds a run; use --resume or another --out", *out)
		}
		if cfg, err = model.LoadConfig(*cfgPath); err != nil {
			return err
		}
		if cfg.Train == nil {
			cfg.Train = model.DefaultTrainConfig(cfg)
		}
		if *precision != "" {
			if err := cfg.SetPrecision(*precision); err != nil {
				return usageErr("train --precision: %v", err)
			}
		}
	}
	// The tokenizer the config names: the run's copy, or the file beside
	// the config, which the new run copies as tokenizer.json.
	tokDir := filepath.Dir(*cfgPath)
	if *resume {
		tokDir = *out
	}
	tk, err := run.OpenTokenizer(tokDir, cfg)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if tk != nil {
		if *taskArg != "" {
			return usageErr("train: the config's tokenizer applies to text (--data), not to --task, whose tokens are the task's")
		}
		cfg.Tokenizer, cfg.TokenizerPattern = run.TokenizerName, ""
	}
	lmJSONL := cfg.Task == "lm" && strings.HasSuffix(*dataPath, ".jsonl")
	if *valPath != "" && cfg.Task != "classify" && !lmJSONL {
		return usageErr("train: --val applies to JSONL lines (a classifier's, or an lm's .jsonl), not to text")
	}
	tc := cfg.Train
	m, err := model.New[float32](cfg)
	if err != nil {
		return err
	}
	prog := train.NewProgress(os.Stderr)
	var src train.Source
	var val data.Task // the validation split's task
	var labels []string
	// stage makes a length curriculum's source (train.curriculum); nil
	// where the data has no shorter form.
	var stage func(n, batch int) (train.Source, error)
	switch {
	case *taskArg != "":
		task, err := listTask("train", *taskArg, cfg)
		if err != nil {
			return err
		}
		name, keys, _ := splitTaskArg("train", *taskArg)
		stage = func(n, batch int) (train.Source, error) {
			t, err := data.NewTaskAtLen(name, keys, n, "")
			if err != nil {
				return nil, err
			}
			return train.TaskSource{L: data.NewLoader(t, data.Train, batch, true, tc.Seed, 0)}, nil
		}
		info := task.Info()
		labels = info.LabelNames
		if info.Tokenizer != nil { // the task reads text through one (gosrc's tokenizer key)
			tk = info.Tokenizer
			cfg.Tokenizer, cfg.TokenizerPattern = run.TokenizerName, ""
		}
		fmt.Fprintf(os.Stderr, "%d parameters; task %s, %d training and %d validation examples; %d steps\n",
			m.NumParams(), info.Name, task.Len(data.Train), task.Len(data.Val), tc.Steps)
		src = train.TaskSource{L: data.NewLoader(task, data.Train, tc.BatchSize, true, tc.Seed, 0)}
		val = task
	case lmJSONL:
		task, err := sequenceTask(cfg, tk, *dataPath, *valPath, *valFrac)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%d parameters; %d training and %d validation sequences, metric %s; %d steps\n",
			m.NumParams(), task.Len(data.Train), task.Len(data.Val), task.Info().Metric, tc.Steps)
		src = train.TaskSource{L: data.NewLoader(task, data.Train, tc.BatchSize, true, tc.Seed, 0)}
		val = task
	case cfg.Task == "lm":
		if cfg.VocabSize < 256 && tk == nil {
			return fmt.Errorf("train: byte-level text needs vocab_size ≥ 256, the config has %d", cfg.VocabSize)
		}
		corpus, err := data.LoadText(*dataPath, *valFrac, tc.SeqLen)
		if err != nil {
			return err
		}
		trainText, valText := textOf(corpus.Train, tk), textOf(corpus.Val, tk)
		unit := "bytes"
		if tk != nil {
			unit = "tokens"
			if trainText.Len() <= tc.SeqLen || valText.Len() <= tc.SeqLen {
				return fmt.Errorf("train: %s: %d training and %d validation tokens is too little for windows of %d tokens", *dataPath, trainText.Len(), valText.Len(), tc.SeqLen+1)
			}
		}
		fmt.Fprintf(os.Stderr, "%d parameters; %d training and %d validation %s; %d steps\n",
			m.NumParams(), trainText.Len(), valText.Len(), unit, tc.Steps)
		ts, err := train.NewTextSource(trainText, tc.BatchSize, tc.SeqLen, tc.Seed)
		if err != nil {
			return err
		}
		src = ts
		stage = func(n, batch int) (train.Source, error) { return ts.WithLen(batch, n) }
		if val, err = textTask(valText, tc.SeqLen, 0, tk); err != nil {
			return err
		}
	case cfg.Task == "classify":
		task, err := labeledTask(cfg, tk, *dataPath, *valPath, *valFrac)
		if err != nil {
			return err
		}
		labels = task.Info().LabelNames
		fmt.Fprintf(os.Stderr, "%d parameters; %d training and %d validation inputs, %d classes; %d steps\n",
			m.NumParams(), task.Len(data.Train), task.Len(data.Val), len(labels), tc.Steps)
		src = train.TaskSource{L: data.NewLoader(task, data.Train, tc.BatchSize, true, tc.Seed, 0)}
		val = task
	default:
		return fmt.Errorf("train: task %q: want \"lm\" (text) or \"classify\" (JSONL)", cfg.Task)
	}
	if len(tc.Curriculum) > 0 && stage == nil {
		return fmt.Errorf("train: train.curriculum needs data that has shorter forms: text, or a --task whose length can be set; the lines of %s have their own lengths", *dataPath)
	}
	if src, err = train.NewCurriculum(tc, src, stage); err != nil {
		return err
	}
	metric := val.Info().Metric
	eval := func() (map[string]any, error) {
		ev, err := data.Evaluate(train.Forward(m), val, data.Val, tc.BatchSize, tc.EvalBatches, 0)
		if err != nil {
			return nil, err
		}
		if metric == data.BitsPerByte {
			prog.Note(fmt.Sprintf("step %d: validation loss %.4f (%.3f bits/byte)", m.Step+1, ev.Loss, ev.Metric))
		} else {
			prog.Note(fmt.Sprintf("step %d: validation loss %.4f, accuracy %.2f%%", m.Step+1, ev.Loss, 100*ev.Accuracy))
		}
		return map[string]any{"val_loss": ev.Loss, "val_" + string(metric): ev.Metric}, nil
	}
	if d == nil {
		cb, _ := json.MarshalIndent(cfg, "", "  ")
		cb = append(cb, '\n')
		if tk != nil {
			// Before run.json: a complete run has its tokenizer.
			if err := run.WriteTokenizer(*out, tk); err != nil {
				return err
			}
		}
		if d, err = run.Create(*out, cb, run.Info{Task: cfg.Task, LabelNames: labels}); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s", cb)
	} else if !slices.Equal(d.Info.LabelNames, labels) {
		return fmt.Errorf("train --resume: the data's labels %q differ from the run's %q", labels, d.Info.LabelNames)
	}
	m.Init(tc.Seed)
	tr := model.NewTrainer(m)
	res, err := train.Run(ctx, d, tr, src, train.Options{
		Steps: tc.Steps, Progress: prog, Name: "train", SkipNonFinite: *skipNonFinite,
		Eval: func() (map[string]any, error) {
			ev, err := eval()
			if s := mixerStatsLine(m, cfg.NLayers); s != "" && err == nil {
				prog.Note("  mixer: " + s)
			}
			return ev, err
		},
		Extra: func() map[string]any { return withMixerStats(map[string]any{}, m, cfg.NLayers) },
	})
	if errors.Is(err, train.ErrInterrupted) {
		fmt.Fprintf(os.Stderr, "interrupted at step %d; checkpoint saved in %s (continue with --resume)\n", res.RunSteps(), d.CkptPath(res.RunSteps()))
		return context.Canceled
	}
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	ckpt := d.CkptPath(res.RunSteps())
	valLoss, _ := res.LastEval["val_loss"].(float64)
	if *asJSON {
		r := map[string]any{"steps": res.Steps, "tokens": res.Tokens, "train_s": res.TrainSeconds, "checkpoint": ckpt}
		if tc.Pretrain != nil {
			r["pretrain_steps"] = res.PretrainSteps
		}
		if res.LastEval != nil {
			r["val_loss"] = valLoss
		}
		return printJSON(r)
	}
	if tc.Pretrain != nil {
		fmt.Printf("pretrained %d steps (%s); ", res.PretrainSteps, tc.Pretrain.Objective)
	}
	fmt.Printf("done: %d steps, %d tokens in %s", res.Steps, res.Tokens, time.Duration(res.TrainSeconds*float64(time.Second)).Round(time.Second))
	if res.LastEval != nil {
		fmt.Printf(", validation loss %.4f", valLoss)
	}
	fmt.Printf("; checkpoint in %s\n", ckpt)
	return nil
}

// textTask is text as the validation split of a task, in windows of T
// tokens with at least context tokens of context per scored token (0:
// fixed windows): what train validates on and eval scores. With a
// tokenizer, the task's bits per byte count each token's bytes.
func textTask(text data.Text, T, context int, tk *tokenizer.Tokenizer) (*data.TextTask, error) {
	w, err := data.NewWindows(text, T, context)
	if err != nil {
		return nil, err
	}
	task := data.NewTextTask("text", nil, w, nil)
	if tk != nil {
		task.WithTokens(tk.TokenLens())
	}
	return task, nil
}

// textOf is text as the model reads it: its bytes, or the ids of tk.
func textOf(b []byte, tk *tokenizer.Tokenizer) data.Text {
	if tk == nil {
		return data.BytesText(b)
	}
	return data.IDText(encodeIDs(tk, string(b)))
}

// encodeIDs is tk's ids of s as int32.
func encodeIDs(tk *tokenizer.Tokenizer, s string) []int32 {
	ids := tk.Encode(s)
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// retokenize replaces the byte tokens of the "text" records by tk's ids.
func retokenize(recs []data.Record, tk *tokenizer.Tokenizer) {
	if tk == nil {
		return
	}
	for i := range recs {
		if recs[i].Text {
			b := make([]byte, len(recs[i].Tokens))
			for j, t := range recs[i].Tokens {
				b[j] = byte(t)
			}
			recs[i].Tokens = encodeIDs(tk, string(b))
		}
	}
}

// listTask builds the task of command cmd's --task, a name or a JSON object
// {"name": …, other keys} of the task list (data.NewTask), and checks that
// cfg's model fits it: its task, classes, vocabulary, length, causality and
// padding.
func listTask(cmd, arg string, cfg *model.Config) (data.Task, error) {
	name, keys, err := splitTaskArg(cmd, arg)
	if err != nil {
		return nil, err
	}
	task, err := data.NewTask(name, keys, "")
	if err != nil {
		return nil, err
	}
	info := task.Info()
	pad := -1
	if cfg.PadID != nil {
		pad = *cfg.PadID
	}
	switch {
	case cfg.Task != string(info.Mode):
		return nil, fmt.Errorf("%s --task %s: the config's task is %q, the task needs %q", cmd, name, cfg.Task, info.Mode)
	case info.Mode == data.Classify && cfg.NClasses != info.Classes:
		return nil, fmt.Errorf("%s --task %s: the config's n_classes is %d, the task has %d classes", cmd, name, cfg.NClasses, info.Classes)
	case cfg.VocabSize < info.Vocab:
		return nil, fmt.Errorf("%s --task %s: the config's vocab_size %d is below the task's %d", cmd, name, cfg.VocabSize, info.Vocab)
	case cfg.MaxLen < info.MaxLen:
		return nil, fmt.Errorf("%s --task %s: the config's max_len %d is below the task's %d", cmd, name, cfg.MaxLen, info.MaxLen)
	case info.Causal && !cfg.Causal:
		return nil, fmt.Errorf("%s --task %s: the task needs a causal model (causal: true)", cmd, name)
	case info.PadID >= 0 && pad != info.PadID:
		return nil, fmt.Errorf("%s --task %s: the task pads with token %d; set pad_id %d", cmd, name, info.PadID, info.PadID)
	}
	if pc := pretrainMLM(cfg); pc != nil && pc.MaskID < info.Vocab {
		return nil, fmt.Errorf("%s --task %s: train.pretrain.mask_id %d is in the task's vocabulary [0, %d); use an id ≥ %d below vocab_size", cmd, name, pc.MaskID, info.Vocab, info.Vocab)
	}
	return task, nil
}

// sequenceTask reads an lm's JSONL training (and validation) lines for
// cfg (data.NewSequences).
func sequenceTask(cfg *model.Config, tk *tokenizer.Tokenizer, trainPath, valPath string, valFrac float64) (*data.Labeled, error) {
	recs, val, err := readSplits(trainPath, valPath, false)
	if err != nil {
		return nil, err
	}
	for _, r := range append(recs[:len(recs):len(recs)], val...) {
		if tk != nil && r.Text && r.Targets != nil {
			return nil, fmt.Errorf("train: %s: \"targets\" with \"text\" under a tokenizer: the targets would not align with its tokens; give \"tokens\"", r.Where)
		}
	}
	retokenize(recs, tk)
	retokenize(val, tk)
	return data.NewSequences(recs, val, data.Limits{Vocab: cfg.VocabSize, MaxLen: cfg.MaxLen, PadID: -1}, valFrac, cfg.Train.Seed)
}

// readSplits reads the JSONL training lines and, when valPath is set, the
// validation lines (nil otherwise); with wantLabel every line needs one.
func readSplits(trainPath, valPath string, wantLabel bool) (train, val []data.Record, err error) {
	if train, err = data.ReadRecords(trainPath, wantLabel, false); err != nil || valPath == "" {
		return train, nil, err
	}
	val, err = data.ReadRecords(valPath, wantLabel, false)
	return train, val, err
}

// splitTaskArg splits a --task argument, a task list name or its JSON object,
// into the name and the other keys.
func splitTaskArg(cmd, arg string) (string, map[string]json.RawMessage, error) {
	name, keys := arg, map[string]json.RawMessage{}
	if strings.HasPrefix(strings.TrimSpace(arg), "{") {
		if err := json.Unmarshal([]byte(arg), &keys); err != nil {
			return "", nil, usageErr("%s --task: %v", cmd, err)
		}
		if err := json.Unmarshal(keys["name"], &name); err != nil || name == "" {
			return "", nil, usageErr("%s --task: task.name: want one of %s", cmd, strings.Join(data.TaskNames(), ", "))
		}
		delete(keys, "name")
	}
	return name, keys, nil
}

// pretrainMLM is cfg's pretrain object when its objective is mlm, else nil.
func pretrainMLM(cfg *model.Config) *model.PretrainConfig {
	if cfg.Train == nil || cfg.Train.Pretrain == nil || cfg.Train.Pretrain.Objective != model.ObjectiveMLM {
		return nil
	}
	return cfg.Train.Pretrain
}

// checkMaskID returns an error naming the first input line that uses the
// mlm mask token (train.pretrain.mask_id), which the data must not use.
func checkMaskID(cfg *model.Config, sets ...[]data.Record) error {
	pc := pretrainMLM(cfg)
	if pc == nil {
		return nil
	}
	for _, recs := range sets {
		for _, r := range recs {
			if slices.Contains(r.Tokens, int32(pc.MaskID)) {
				return fmt.Errorf("train: %s: uses token %d, the config's train.pretrain.mask_id (the mask token must not occur in the data)", r.Where, pc.MaskID)
			}
		}
	}
	return nil
}

// labeledTask reads a classifier's JSONL training (and validation) lines
// for cfg: n_classes must equal the number of distinct training labels.
func labeledTask(cfg *model.Config, tk *tokenizer.Tokenizer, trainPath, valPath string, valFrac float64) (*data.Labeled, error) {
	recs, val, err := readSplits(trainPath, valPath, true)
	if err != nil {
		return nil, err
	}
	retokenize(recs, tk)
	retokenize(val, tk)
	if err := checkMaskID(cfg, recs, val); err != nil {
		return nil, err
	}
	names := data.LabelNames(recs)
	if len(names) != cfg.NClasses {
		return nil, fmt.Errorf("train: %s has %d distinct labels (%s), the config's n_classes is %d", trainPath, len(names), strings.Join(names, ", "), cfg.NClasses)
	}
	lim := data.Limits{Vocab: cfg.VocabSize, MaxLen: cfg.MaxLen, PadID: -1}
	if cfg.PadID != nil {
		lim.PadID = *cfg.PadID
	}
	return data.NewLabeled(recs, val, names, lim, valFrac, cfg.Train.Seed)
}
