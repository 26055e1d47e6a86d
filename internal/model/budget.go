package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/mixer"
)

// Need is what a run of a config needs in memory at one batch shape,
// computed from the config alone, before anything is allocated: the
// memory plan of the passes (activations, their gradients and scratch),
// the parameters with their gradients and AdamW moments, and the buffers
// a checkpoint save holds.
type Need struct {
	Plan Plan
	// Eval is, in training, the plan of the evaluation forward at length T
	// and batch EvalBatch (a forward-only plan, which keeps a token-level
	// task's logits where the training plan does not): the model's slabs
	// grow to hold both (PassBytes).
	Eval      Plan
	NumParams int
	// Train is false for inference (Load): parameters only, no gradients,
	// moments or checkpoint buffers.
	Train bool
}

// PassBytes is the planned memory of the passes: Plan's, or in training
// the slabs that hold both Plan and Eval.
func (n Need) PassBytes() int64 {
	if !n.Train {
		return n.Plan.Bytes()
	}
	p, e := n.Plan, n.Eval
	return int64(max(p.ActElems, e.ActElems)+max(p.GradElems, e.GradElems))*int64(p.ElemSize) + 2*int64(max(p.HalfElems, e.HalfElems))
}

// ParamBytes is the parameters' memory: the weights, and in training their
// gradients and the two AdamW moments.
func (n Need) ParamBytes() int64 {
	b := int64(n.NumParams) * int64(n.Plan.ElemSize)
	if n.Train {
		b *= 4
	}
	return b
}

// SaveBytes is what a checkpoint save holds at once: the weights and both
// moments encoded into tensors and then into one byte image per file,
// about six float32 arrays of the parameters' size (run.Dir.SaveTrainer).
func (n Need) SaveBytes() int64 {
	if !n.Train {
		return 0
	}
	return 6 * 4 * int64(n.NumParams)
}

// Bytes is the whole need.
func (n Need) Bytes() int64 { return n.PassBytes() + n.ParamBytes() + n.SaveBytes() }

// Largest lists the k largest items of the need, largest first: plan
// entries ("ff.fc1 2 × 1.00 GiB") and the parameters.
func (n Need) Largest(k int) []string {
	type item struct {
		name  string
		bytes int64
	}
	var items []item
	for _, e := range n.Plan.Entries {
		one := n.Plan.entryBytes(e)
		name := fmt.Sprintf("%s %s", e.Name, memstat.FormatBytes(one))
		if e.Count > 1 {
			name = fmt.Sprintf("%s %d × %s", e.Name, e.Count, memstat.FormatBytes(one))
		}
		items = append(items, item{name, int64(e.Count) * one})
	}
	pname := "parameters"
	if n.Train {
		pname = "parameters, gradients and AdamW moments"
	}
	items = append(items, item{fmt.Sprintf("%s %s", pname, memstat.FormatBytes(n.ParamBytes())), n.ParamBytes()})
	if x := n.PassBytes() - n.Plan.Bytes(); x > 0 {
		items = append(items, item{fmt.Sprintf("the evaluation forward's logits and scratch beyond training's %s", memstat.FormatBytes(x)), x})
	}
	if n.Train {
		items = append(items, item{fmt.Sprintf("checkpoint save buffers %s", memstat.FormatBytes(n.SaveBytes())), n.SaveBytes()})
	}
	slices.SortStableFunc(items, func(a, b item) int {
		switch {
		case a.bytes > b.bytes:
			return -1
		case a.bytes < b.bytes:
			return 1
		}
		return 0
	})
	var out []string
	for _, it := range items[:min(k, len(items))] {
		out = append(out, it.name)
	}
	return out
}

// NeedOf computes the need of config c at batch B and length T, on passes
// of threads threads, in float32 (the precision of training and of loaded
// models), without allocating the parameters: it builds the mixers only
// for their parameter specs and plan sizes.
func NeedOf(c *Config, B, T, threads int, train bool) (Need, error) {
	return needOf[float32](c, B, T, threads, train)
}

func needOf[F kernels.Float](c *Config, B, T, threads int, train bool) (Need, error) {
	if c.kind.New32 == nil || c.kind.New64 == nil {
		return Need{}, fmt.Errorf("model: config has no resolved mixer kind (build it with ParseConfig)")
	}
	mixers, specs, err := newMixers[F](c)
	if err != nil {
		return Need{}, err
	}
	n := Need{Train: train}
	for _, s := range paramSpecs(c, specs) {
		n.NumParams += s.Size()
	}
	n.Plan = newPlan(c, mixers, B, T, mixer.Budget(threads), !train)
	if train {
		n.Eval = newPlan(c, mixers, evalBatch(c, mixers, B, T, mixer.Budget(threads)), T, mixer.Budget(threads), true)
	}
	return n, nil
}

// EvalBatch is the batch an evaluation of sequences of T tokens runs in
// when training runs batches of B: the largest divisor of B whose forward
// (ForwardPlan) fits in the slabs of the training pass (Plan(B, T)), so
// that evaluating never grows the workspace training holds, and covers the
// same examples in B/EvalBatch times the batches. Only a large vocabulary's
// logits, which a forward without targets keeps and a training pass does
// not, make it smaller than B.
func (m *Model[F]) EvalBatch(B, T int) int {
	return evalBatch(m.Config, m.mixers, B, T, m.threads())
}

func evalBatch[F kernels.Float](c *Config, mixers []mixer.Mixer[F], B, T, threads int) int {
	tp := newPlan(c, mixers, B, T, threads, false)
	for b := B; b > 1; b-- {
		if B%b != 0 {
			continue
		}
		if fp := newPlan(c, mixers, b, T, threads, true); fp.ActElems <= tp.ActElems && fp.GradElems <= tp.GradElems && fp.HalfElems <= tp.HalfElems {
			return b
		}
	}
	return 1
}

// Shape is one batch shape a run trains on: B sequences of T tokens.
type Shape struct{ B, T int }

// TrainShapes are the batch shapes training c goes through: its length
// curriculum's stages and then train.batch_size × train.seq_len.
func TrainShapes(c *Config) []Shape {
	tc := c.Train
	if tc == nil {
		return nil
	}
	var s []Shape
	for _, st := range tc.Curriculum {
		s = append(s, Shape{st.BatchSize, st.Len})
	}
	T := tc.SeqLen
	if T == 0 {
		T = c.MaxLen
	}
	return append(s, Shape{tc.BatchSize, T})
}

// TrainNeed is the largest need of training c over its shapes
// (TrainShapes).
func TrainNeed(c *Config, threads int) (Need, error) {
	var best Need
	for _, s := range TrainShapes(c) {
		n, err := NeedOf(c, s.B, s.T, threads, true)
		if err != nil {
			return Need{}, err
		}
		if n.Bytes() > best.Bytes() {
			best = n
		}
	}
	return best, nil
}

// BudgetError is a run refused before it allocates: its need is over the
// memory budget. Fits lists changes to the config that would fit.
type BudgetError struct {
	Need   Need
	Budget int64
	Fits   []string
}

func (e *BudgetError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the memory plan at batch %d, length %d needs %s, over the memory budget of %s; largest: %s",
		e.Need.Plan.B, e.Need.Plan.T, memstat.FormatBytes(e.Need.Bytes()), memstat.FormatBytes(e.Budget), strings.Join(e.Need.Largest(3), ", "))
	if len(e.Fits) > 0 {
		fmt.Fprintf(&b, "; within the budget: %s", strings.Join(e.Fits, ", or "))
	} else {
		b.WriteString("; no smaller batch or length of this model fits it")
	}
	return b.String()
}

// CheckTrainBudget returns a *BudgetError when training c needs more than
// budget bytes at its largest batch shape (no check when budget ≤ 0): see
// CheckBudget.
func CheckTrainBudget(c *Config, threads int, budget int64) error {
	if budget <= 0 {
		return nil
	}
	need, err := TrainNeed(c, threads)
	if err != nil {
		return err
	}
	return CheckBudget(c, need.Plan.B, need.Plan.T, threads, true, budget)
}

// CheckBudget returns a *BudgetError when a run of c at batch B and
// length T (training when train, else inference) needs more than budget
// bytes (no check when budget ≤ 0). The error names the largest planned
// tensors and what would fit: a smaller batch, a shorter length, or
// checkpoint or reversible blocks.
func CheckBudget(c *Config, B, T, threads int, train bool, budget int64) error {
	if budget <= 0 {
		return nil
	}
	need, err := NeedOf(c, B, T, threads, train)
	if err != nil {
		return err
	}
	if need.Bytes() <= budget {
		return nil
	}
	e := &BudgetError{Need: need, Budget: budget}
	fits := func(c *Config, B, T int) bool {
		n, err := NeedOf(c, B, T, threads, train)
		return err == nil && n.Bytes() <= budget
	}
	// The largest batch at this length.
	if b := largest(1, B-1, func(b int) bool { return fits(c, b, T) }); b > 0 {
		e.Fits = append(e.Fits, fmt.Sprintf("batch_size %d", b))
	}
	// The longest length at this batch, in steps of 64 tokens (of 1 below
	// 128): train.seq_len when it is below max_len, else max_len, which
	// also sizes the position table and some mixers' parameters.
	step := 1
	if T >= 128 {
		step = 64
	}
	key := "max_len"
	if T < c.MaxLen && c.Train != nil && c.Train.SeqLen == T {
		key = "train.seq_len"
	}
	if k := largest(1, (T-1)/step, func(k int) bool {
		short := *c
		if key == "max_len" {
			short.MaxLen = k * step
		}
		return fits(&short, B, k*step)
	}); k > 0 {
		e.Fits = append(e.Fits, fmt.Sprintf("%s %d", key, k*step))
	}
	if train && !c.Checkpoint && !c.Reversible { // they save training memory only
		ck := *c
		ck.Checkpoint = true
		if fits(&ck, B, T) {
			e.Fits = append(e.Fits, `"checkpoint": true`)
		}
		rv := *c
		rv.Reversible = true
		if c.Precision != "fp16" && fits(&rv, B, T) {
			e.Fits = append(e.Fits, `"reversible": true`)
		}
	}
	return e
}

// largest is the largest x in [lo, hi] with ok(x), for ok true up to some
// x and false after it; 0 when none.
func largest(lo, hi int, ok func(int) bool) int {
	if hi < lo || !ok(lo) {
		return 0
	}
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// WorkspaceBytes is the memory the model's pass workspace holds now: its
// slabs, sized by the largest pass so far (they grow and are kept).
func (m *Model[F]) WorkspaceBytes() int64 {
	var z F
	return int64(sizeOf(z))*int64(cap(m.acts)+cap(m.grds)) + 2*int64(cap(m.acts16))
}

// StateBytes bounds the decoding state (Decoding.Bytes) of a sequence
// started with NewDecoding(maxLen) once it holds n positions, summed over
// the blocks; ok is false when a mixer does not bound its states
// (mixer.StateSizer) or the model does not decode incrementally.
func (m *Model[F]) StateBytes(maxLen, n int) (b int64, ok bool) {
	if m.CanDecode() != nil {
		return 0, false
	}
	for _, mx := range m.mixers {
		s, ok := mx.(mixer.StateSizer)
		if !ok {
			return 0, false
		}
		b += s.StateBytes(maxLen, n)
	}
	return b, true
}
