package mixer

import (
	"encoding/json"
	"fmt"

	"github.com/tokenmix/tokenmix/internal/strict"
)

// Config is what a mixer constructor receives: the model dimensions plus the
// kind-specific options from the "mixer" object of the model config.
type Config struct {
	D, Heads int
	MaxLen   int
	Causal   bool
	// Layer is this block's index and NLayers the model depth (for
	// per-layer patterns such as the Sparse Transformer's interleave).
	Layer, NLayers int
	// Precision is the model's precision, "fp32", "bf16" or "fp16" (""
	// means "fp32"): under "bf16" a float32 mixer multiplies bf16 copies of
	// its matrix operands with float32 sums (kernels.Gemm in PrecBF16) and keeps its
	// reductions in float32.
	Precision string
	// Opts holds the mixer object's keys other than "kind".
	Opts Options
}

// CheckHeads is the one check of the model dimensions that every
// multi-head mixer shares: d_model a positive multiple of n_heads.
func CheckHeads(d, heads int) error {
	if d <= 0 || heads <= 0 || d%heads != 0 {
		return fmt.Errorf("mixer: d_model %d must be a positive multiple of n_heads %d", d, heads)
	}
	return nil
}

// Options holds a mixer's JSON options and reads them strictly: every getter
// records the key as read; a null, a wrong type or a value a constructor
// rejects (Fail) is an error naming the key ("mixer.block: …"), and Err
// reports the first such error or any key that no getter asked for. The
// zero Options is empty. Copies share their state.
type Options struct {
	Kind string
	o    *strict.Object
}

// ParseOptions splits a mixer JSON object into its kind and options.
func ParseOptions(data []byte) (Options, error) {
	obj, err := strict.Parse("mixer.", data)
	if err != nil {
		return Options{}, err
	}
	o := Options{o: obj}
	r, ok := obj.Raw("kind")
	if !ok {
		return o, fmt.Errorf("mixer.kind: required")
	}
	if err := json.Unmarshal(r, &o.Kind); err != nil {
		return o, fmt.Errorf("mixer.kind: want a string, got %s", r)
	}
	o.hint()
	return o, nil
}

// NewOptions builds Options from already-split JSON values (nil is fine).
func NewOptions(kind string, raw map[string]json.RawMessage) Options {
	o := Options{Kind: kind, o: strict.New("mixer.", raw)}
	o.hint()
	return o
}

func (o *Options) hint() {
	o.o.Hint = fmt.Sprintf("kind %s; tokenmix mixers lists each kind's options", o.Kind)
}

// OptionsOf is a convenience for tests and presets: options from Go values.
func OptionsOf(kind string, kv map[string]any) Options {
	raw := map[string]json.RawMessage{}
	for k, v := range kv {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		raw[k] = b
	}
	return NewOptions(kind, raw)
}

func (o *Options) obj() *strict.Object {
	if o.o == nil {
		*o = NewOptions(o.Kind, nil)
	}
	return o.o
}

// Has reports whether key is present.
func (o *Options) Has(key string) bool { return o.obj().Has(key) }

// Int returns option key as an int, or def when absent.
func (o *Options) Int(key string, def int) int {
	o.obj().Int(key, &def)
	return def
}

// Float returns option key as a float64, or def when absent.
func (o *Options) Float(key string, def float64) float64 {
	o.obj().Float(key, &def)
	return def
}

// Bool returns option key as a bool, or def when absent.
func (o *Options) Bool(key string, def bool) bool {
	o.obj().Bool(key, &def)
	return def
}

// String returns option key as a string, or def when absent.
func (o *Options) String(key string, def string) string {
	o.obj().String(key, &def)
	return def
}

// Fail records an invalid-value error for key (the first error wins).
func (o *Options) Fail(key, format string, args ...any) { o.obj().Fail(key, format, args...) }

// Err returns the first type or value error, or an error naming every key
// that was given but never read.
func (o *Options) Err() error { return o.obj().Err() }

// Raw returns the options as a JSON object including "kind", for saving.
func (o Options) Raw() map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	if o.o != nil {
		for _, k := range o.o.Keys() {
			m[k], _ = o.o.Peek(k)
		}
	}
	kb, _ := json.Marshal(o.Kind)
	m["kind"] = kb
	return m
}

// MarshalJSON writes the options as a config's "mixer" object, "kind"
// included.
func (o Options) MarshalJSON() ([]byte, error) { return json.Marshal(o.Raw()) }

// UnmarshalJSON reads a config's "mixer" object (ParseOptions).
func (o *Options) UnmarshalJSON(b []byte) error {
	p, err := ParseOptions(b)
	if err != nil {
		return err
	}
	*o = p
	return nil
}
