package arena

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/optim"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// The pixel baselines' settings: Adam (AdamW without weight decay) at
// pixelLR, cosine-decayed to pixelLR/100, for pixelEpochs passes over the
// training split in batches of pixelBatch.
const (
	pixelHidden = 256
	pixelEpochs = 5
	pixelBatch  = 128
	pixelLR     = 1e-3
)

// pixelBaselines trains the references printed with sequential
// Fashion-MNIST: a logistic regression and an MLP with one hidden layer of
// pixelHidden ReLU units, both on the pixels scaled to [0,1], on the
// arena's training split in the loader's order for seed, and scores them on
// the arena's test split. The step count follows from the split size
// (pixelEpochs passes), so the figures depend only on the task, the seed,
// the thread count and the kernel path.
func pixelBaselines(task data.Task, seed uint64) []data.Baseline {
	var out []data.Baseline
	for _, c := range []struct {
		name   string
		hidden int
	}{{"logistic regression", 0}, {fmt.Sprintf("MLP, %d ReLU", pixelHidden), pixelHidden}} {
		b := data.Baseline{Name: c.name}
		acc, steps, err := trainPixels(task, c.hidden, seed)
		if err != nil {
			b.Err = err.Error()
		} else {
			b.Accuracy = acc
			b.Note = fmt.Sprintf("on the pixels/255, same split: Adam lr %g (cosine), %d epochs of batch %d = %d steps, seed %d",
				pixelLR, pixelEpochs, pixelBatch, steps, seed)
		}
		out = append(out, b)
	}
	return out
}

// pixelNet is a logistic regression (hidden 0) or a one-hidden-layer ReLU
// MLP from in inputs to out classes. Its slabs hold, layer by layer, W
// [rows,cols] then b [rows]: W1 [hidden,in], b1, W2 [out,hidden], b2; or
// W [out,in], b.
type pixelNet struct {
	in, hidden, out int
	params, grads   []float32
}

// pixelLayer is one linear layer's weights and bias in a slab.
type pixelLayer struct {
	w, b       []float32
	rows, cols int
}

func newPixelNet(in, hidden, out int, seed uint64) *pixelNet {
	n := &pixelNet{in: in, hidden: hidden, out: out}
	size := 0
	for _, d := range n.dims() {
		size += d[0]*d[1] + d[0]
	}
	n.params, n.grads = make([]float32, size), make([]float32, size)
	// PyTorch's nn.Linear default: weights uniform in ±1/√fan_in; biases
	// are zero here.
	rng := rand.New(rand.NewPCG(seed, 0x706978656c73)) // "pixels"
	for _, l := range n.layers(n.params) {
		bound := 1 / math.Sqrt(float64(l.cols))
		for i := range l.w {
			l.w[i] = float32(bound * (2*rng.Float64() - 1))
		}
	}
	return n
}

// dims lists each layer's [rows, cols].
func (n *pixelNet) dims() [][2]int {
	if n.hidden == 0 {
		return [][2]int{{n.out, n.in}}
	}
	return [][2]int{{n.hidden, n.in}, {n.out, n.hidden}}
}

// layers splits slab (params or grads) into its layers.
func (n *pixelNet) layers(slab []float32) []pixelLayer {
	var ls []pixelLayer
	off := 0
	for _, d := range n.dims() {
		w := slab[off : off+d[0]*d[1]]
		off += d[0] * d[1]
		ls = append(ls, pixelLayer{w: w, b: slab[off : off+d[0]], rows: d[0], cols: d[1]})
		off += d[0]
	}
	return ls
}

// forward sets logits [B,out] from x [B,in], keeping the hidden ReLU
// outputs in h [B,hidden] (unused without a hidden layer).
func (n *pixelNet) forward(logits, h, x []float32, B int) {
	ls := n.layers(n.params)
	if n.hidden == 0 {
		linear(logits, x, ls[0], B)
		return
	}
	linear(h, x, ls[0], B)
	for i, v := range h[:B*n.hidden] {
		h[i] = max(v, 0)
	}
	linear(logits, h, ls[1], B)
}

// backward accumulates the parameter gradients into n.grads from dlogits
// [B,out], the forward pass's x and h, using dh [B,hidden] as scratch.
func (n *pixelNet) backward(dlogits, dh, h, x []float32, B int) {
	ps, gs := n.layers(n.params), n.layers(n.grads)
	if n.hidden == 0 {
		linearGrad(gs[0], nil, dlogits, x, ps[0].w, B)
		return
	}
	linearGrad(gs[1], dh, dlogits, h, ps[1].w, B)
	// dh = dlogits·W2, zero where the ReLU was off.
	for i, v := range h[:B*n.hidden] {
		if v <= 0 {
			dh[i] = 0
		}
	}
	linearGrad(gs[0], nil, dh, x, ps[0].w, B)
}

// linear sets y [B,rows] = x [B,cols]·Wᵀ + b (the model's linear layer,
// kernels.LinearForward).
func linear(y, x []float32, l pixelLayer, B int) {
	kernels.LinearForward(parallel.Threads(), kernels.PrecFP32, y, x, l.w, nil, l.b, B, l.cols, l.rows, false)
}

// linearGrad accumulates g.w += dyᵀ·x and g.b += Σ_rows dy, for dy
// [B,rows] and x [B,cols], and sets dx [B,cols] = dy·W unless dx is nil
// (kernels.LinearBackward).
func linearGrad(g pixelLayer, dx, dy, x, w []float32, B int) {
	kernels.LinearBackward(parallel.Threads(), kernels.PrecFP32, dx, g.w, g.b, dy, x, w, B, g.cols, g.rows, true)
}

// pixels sets x [B,in] to a batch's tokens divided by 255.
func pixels(x []float32, b *data.Batch) {
	for i, t := range b.Tokens[:b.B*b.T] {
		x[i] = float32(t) / 255
	}
}

// trainPixels trains a pixelNet with hidden units (0: logistic regression)
// on task's training split and returns its test accuracy and its number of
// steps. It returns an error for a task that is not a classification of
// fixed-length sequences, has an empty split or a training label out of
// range.
func trainPixels(task data.Task, hidden int, seed uint64) (acc float64, steps int, err error) {
	info := task.Info()
	nTrain, nTest := task.Len(data.Train), task.Len(data.Test)
	if info.Mode != data.Classify || info.Classes < 2 || info.MaxLen < 1 {
		return 0, 0, fmt.Errorf("pixel baselines: task %s is not a classification of fixed-length sequences", info.Name)
	}
	if nTrain == 0 || nTest == 0 {
		return 0, 0, fmt.Errorf("pixel baselines: task %s has %d training and %d test examples", info.Name, nTrain, nTest)
	}
	in, out := info.MaxLen, info.Classes
	n := newPixelNet(in, hidden, out, seed)
	opt := optim.NewAdamW[float32](len(n.params), []optim.Group{{Lo: 0, Hi: len(n.params)}}, 0.9, 0.999, 1e-8, 0)
	steps = pixelEpochs * ((nTrain + pixelBatch - 1) / pixelBatch)
	sched := optim.Schedule{LR: pixelLR, MinLR: pixelLR / 100, Steps: steps}

	x := make([]float32, pixelBatch*in)             // [B,in]
	h := make([]float32, pixelBatch*max(hidden, 1)) // [B,hidden]
	dh := make([]float32, len(h))                   // [B,hidden]
	logits := make([]float32, pixelBatch*out)       // [B,out], then its gradient
	var b data.Batch
	l := data.NewLoader(task, data.Train, pixelBatch, true, seed, in)
	for step := range steps {
		l.Next(&b)
		pixels(x, &b)
		n.forward(logits, h, x, b.B)
		// Softmax cross-entropy: dlogits = (softmax − one-hot) / B.
		kernels.SoftmaxRows(logits[:b.B*out], b.B, out)
		for r, t := range b.Targets[:b.B] {
			if t < 0 || int(t) >= out {
				return 0, 0, fmt.Errorf("pixel baselines: label %d of training example %d is not in 0–%d", t, b.Index[r], out-1)
			}
			logits[r*out+int(t)]--
		}
		kernels.Scale(logits[:b.B*out], 1/float32(b.B))
		clear(n.grads)
		n.backward(logits, dh, h, x, b.B)
		opt.Update(n.params, n.grads, sched.At(step))
	}

	correct := 0
	tl := data.NewLoader(task, data.Test, pixelBatch, false, 0, in)
	for tl.Next(&b) {
		pixels(x, &b)
		n.forward(logits, h, x, b.B)
		for r, t := range b.Targets[:b.B] {
			if data.Argmax(logits[r*out:(r+1)*out]) == int(t) {
				correct++
			}
		}
	}
	return float64(correct) / float64(nTest), steps, nil
}
