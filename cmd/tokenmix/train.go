package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
)

// runTrain is `tokenmix train`: a byte-level language model on a text file
// or directory, with a progress line, JSONL metrics and resumable
// checkpoints in --out.
//
// Layout of OUT: config.json (the resolved config), metrics.jsonl (one
// object per log or eval line) and checkpoint/ (weights.safetensors,
// optim.safetensors, run.json).
func runTrain(ctx context.Context, args []string) error {
	fs := newFlags("train")
	cfgPath := fs.String("config", "", "model config JSON; its \"train\" object sets the run (defaults otherwise)")
	dataPath := fs.String("data", "", "text file or directory (byte-level LM, vocab_size ≥ 256)")
	out := fs.String("out", "", "run directory")
	resume := fs.Bool("resume", false, "continue the run in --out from its checkpoint")
	valFrac := fs.Float64("val-frac", 0.05, "fraction of the text kept for validation")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dataPath == "" || *out == "" || (*cfgPath == "" && !*resume) || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	ckDir := filepath.Join(*out, "checkpoint")
	var cfg *model.Config
	var err error
	if *resume {
		rec, err := model.ReadRunRecord(ckDir)
		if err != nil {
			return fmt.Errorf("train --resume: %w", err)
		}
		if cfg, err = model.ParseConfig(rec.Config); err != nil {
			return fmt.Errorf("train --resume: saved config: %w", err)
		}
		if *cfgPath != "" {
			c2, err := model.LoadConfig(*cfgPath)
			if err != nil {
				return err
			}
			a, _ := json.Marshal(cfg)
			b, _ := json.Marshal(c2)
			if string(a) != string(b) {
				return fmt.Errorf("train --resume: --config differs from the run's saved config (drop --config to resume with the saved one)")
			}
		}
	} else {
		if _, err := os.Stat(ckDir); err == nil {
			return fmt.Errorf("train: %s already holds a run; use --resume or another --out", *out)
		}
		if cfg, err = model.LoadConfig(*cfgPath); err != nil {
			return err
		}
	}
	if cfg.Task != "lm" || cfg.VocabSize < 256 {
		return fmt.Errorf("train: byte-level text needs task \"lm\" and vocab_size ≥ 256")
	}
	if cfg.Train == nil {
		cfg.Train = model.DefaultTrainConfig(cfg)
	}
	tc := cfg.Train
	corpus, err := data.LoadText(*dataPath, *valFrac, tc.SeqLen)
	if err != nil {
		return err
	}
	m, err := model.New[float32](cfg)
	if err != nil {
		return err
	}
	tr := model.NewTrainer(m)
	pcg := rand.NewPCG(tc.Seed, 0x7465787462617463)
	var rec model.RunRecord
	if *resume {
		if rec, err = model.LoadRun(ckDir, tr); err != nil {
			return err
		}
		if err := pcg.UnmarshalBinary(rec.RNG); err != nil {
			return fmt.Errorf("train --resume: RNG state: %v", err)
		}
	} else {
		m.Init(tc.Seed)
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		cb, _ := json.MarshalIndent(cfg, "", "  ")
		if err := os.WriteFile(filepath.Join(*out, "config.json"), append(cb, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s\n", cb)
	}
	rng := rand.New(pcg)
	mf, err := os.OpenFile(filepath.Join(*out, "metrics.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer mf.Close()
	metrics := json.NewEncoder(mf)
	fmt.Fprintf(os.Stderr, "%d parameters; %d training and %d validation bytes; steps %d..%d of %d\n",
		m.NumParams(), len(corpus.Train), len(corpus.Val), tr.Opt.Step+1, tc.Steps, tc.Steps)

	B, T := tc.BatchSize, tc.SeqLen
	tokens, targets := make([]int32, B*T), make([]int32, B*T)
	save := func(finished bool) error {
		st, _ := pcg.MarshalBinary()
		rec.RNG, rec.Finished = st, finished
		return model.SaveRun(ckDir, tr, rec)
	}
	prog := newProgress(os.Stderr, tc.Steps, tr.Opt.Step)
	start := time.Now()
	elapsed0 := rec.Elapsed
	valLoss := math.NaN() // the last evaluation's
	for tr.Opt.Step < tc.Steps {
		if ctx.Err() != nil {
			prog.done()
			if err := save(false); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "interrupted at step %d; checkpoint saved (continue with --resume)\n", tr.Opt.Step)
			return ctx.Err()
		}
		data.TextBatch(tokens, targets, corpus.Train, B, T, rng)
		t0 := time.Now()
		st, err := tr.Step(tokens, targets, B, T)
		if err != nil {
			return err
		}
		step := tr.Opt.Step // updates done
		rec.Tokens += int64(B * T)
		rec.Elapsed = elapsed0 + time.Since(start).Seconds()
		tps := float64(B*T) / time.Since(t0).Seconds()
		if math.IsNaN(st.Loss) {
			prog.done()
			return fmt.Errorf("train: loss is NaN at step %d", step)
		}
		prog.update(step, st.Loss, tps)
		if step%tc.LogEvery == 0 || step == tc.Steps {
			metrics.Encode(withMixerStats(map[string]any{"step": step, "loss": st.Loss, "lr": st.LR, "grad_norm": st.GradNorm,
				"tokens_per_s": tps, "tokens": rec.Tokens, "elapsed_s": rec.Elapsed}, m, cfg.NLayers))
			if !prog.tty {
				prog.line(step, st.Loss, tps)
			}
		}
		if tc.EvalEvery > 0 && (step%tc.EvalEvery == 0 || step == tc.Steps) {
			vl, err := evalText(tr, corpus.Val, B, T, tc.EvalBatches, tc.Seed)
			if err != nil {
				return err
			}
			valLoss = vl
			metrics.Encode(withMixerStats(map[string]any{"step": step, "val_loss": vl, "val_bits_per_byte": vl / math.Ln2}, m, cfg.NLayers))
			prog.note(fmt.Sprintf("step %d: validation loss %.4f (%.3f bits/byte)", step, vl, vl/math.Ln2))
			if s := mixerStatsLine(m, cfg.NLayers); s != "" {
				prog.note("  mixer: " + s)
			}
		}
		if tc.CheckpointEvery > 0 && step%tc.CheckpointEvery == 0 && step < tc.Steps {
			if err := save(false); err != nil {
				return err
			}
		}
	}
	prog.done()
	if err := save(true); err != nil {
		return err
	}
	if *asJSON {
		res := map[string]any{"steps": tr.Opt.Step, "tokens": rec.Tokens, "elapsed_s": rec.Elapsed, "checkpoint": ckDir}
		if !math.IsNaN(valLoss) {
			res["val_loss"] = valLoss
		}
		return printJSON(res)
	}
	fmt.Printf("done: %d steps, %d tokens in %s, validation loss %.4f; checkpoint in %s\n", tr.Opt.Step, rec.Tokens,
		time.Duration(rec.Elapsed*float64(time.Second)).Round(time.Second), valLoss, ckDir)
	return nil
}

// evalText is the mean loss over n fixed validation windows (the same
// windows at every evaluation, drawn from seed).
func evalText(tr *model.Trainer[float32], val []byte, B, T, n int, seed uint64) (float64, error) {
	rng := rand.New(rand.NewPCG(seed, 0x76616c))
	tokens, targets := make([]int32, B*T), make([]int32, B*T)
	var sum float64
	for i := 0; i < n; i++ {
		data.TextBatch(tokens, targets, val, B, T, rng)
		l, err := tr.Eval(tokens, targets, B, T)
		if err != nil {
			return 0, err
		}
		sum += l
	}
	return sum / float64(n), nil
}

// progress draws a one-line progress bar on a terminal, or plain lines
// otherwise.
type progress struct {
	w           io.Writer
	tty         bool
	total, from int
	start       time.Time
	drawn       bool
}

func newProgress(f *os.File, total, from int) *progress {
	fi, err := f.Stat()
	tty := err == nil && fi.Mode()&os.ModeCharDevice != 0
	return &progress{w: f, tty: tty, total: total, from: from, start: time.Now()}
}

func (p *progress) eta(step int) string {
	if step <= p.from {
		return "?"
	}
	per := time.Since(p.start) / time.Duration(step-p.from)
	return (per * time.Duration(p.total-step)).Round(time.Second).String()
}

func (p *progress) update(step int, loss, tps float64) {
	if !p.tty {
		return
	}
	const width = 24
	n := width * step / max(p.total, 1)
	bar := strings.Repeat("=", n) + strings.Repeat(" ", width-n)
	fmt.Fprintf(p.w, "\r[%s] %d/%d loss %.4f %.0f tok/s ETA %s\x1b[K", bar, step, p.total, loss, tps, p.eta(step))
	p.drawn = true
}

func (p *progress) line(step int, loss, tps float64) {
	fmt.Fprintf(p.w, "step %d/%d loss %.4f %.0f tok/s ETA %s\n", step, p.total, loss, tps, p.eta(step))
}

func (p *progress) note(s string) {
	if p.tty && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	fmt.Fprintln(p.w, s)
}

func (p *progress) done() {
	if p.tty && p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}
