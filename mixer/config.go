package mixer

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
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
	// Opts holds the mixer object's keys other than "kind".
	Opts Options
}

// Options holds a mixer's JSON options and reads them strictly: every getter
// records the key as used, type errors name the key, and Err reports the
// first error or any key that no getter asked for.
type Options struct {
	Kind string
	raw  map[string]json.RawMessage
	used map[string]bool
	err  error
	rec  *recorder // non-nil only inside Describe
}

// ParseOptions splits a mixer JSON object into its kind and options.
func ParseOptions(data []byte) (Options, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Options{}, fmt.Errorf("mixer: %v", err)
	}
	o := NewOptions("", raw)
	k, ok := raw["kind"]
	if !ok {
		return o, fmt.Errorf("mixer: missing key \"kind\"")
	}
	if err := json.Unmarshal(k, &o.Kind); err != nil {
		return o, fmt.Errorf("mixer.kind: want a string")
	}
	delete(o.raw, "kind")
	return o, nil
}

// NewOptions builds Options from already-split JSON values (nil is fine).
func NewOptions(kind string, raw map[string]json.RawMessage) Options {
	if raw == nil {
		raw = map[string]json.RawMessage{}
	}
	return Options{Kind: kind, raw: raw, used: map[string]bool{}}
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

// Has reports whether key is present.
func (o *Options) Has(key string) bool {
	o.rec.note(key, "", nil)
	_, ok := o.raw[key]
	return ok
}

func (o *Options) get(key string, dst any, want string) bool {
	if o.used == nil {
		o.used = map[string]bool{}
	}
	o.used[key] = true
	o.rec.note(key, want, dst)
	r, ok := o.raw[key]
	if !ok {
		return false
	}
	if err := json.Unmarshal(r, dst); err != nil && o.err == nil {
		o.err = fmt.Errorf("mixer.%s: want %s, got %s", key, want, r)
	}
	return true
}

// Int returns option key as an int, or def when absent.
func (o *Options) Int(key string, def int) int {
	v := def
	o.get(key, &v, "an integer")
	return v
}

// Float returns option key as a float64, or def when absent.
func (o *Options) Float(key string, def float64) float64 {
	v := def
	o.get(key, &v, "a number")
	return v
}

// Bool returns option key as a bool, or def when absent.
func (o *Options) Bool(key string, def bool) bool {
	v := def
	o.get(key, &v, "true or false")
	return v
}

// String returns option key as a string, or def when absent.
func (o *Options) String(key string, def string) string {
	v := def
	o.get(key, &v, "a string")
	return v
}

// Fail records an invalid-value error for key (the first error wins).
func (o *Options) Fail(key, format string, args ...any) {
	o.rec.fail(key)
	if o.err == nil {
		o.err = fmt.Errorf("mixer.%s: %s", key, fmt.Sprintf(format, args...))
	}
}

// Err returns the first type or value error, or an error naming every key
// that was given but never read.
func (o *Options) Err() error {
	if o.err != nil {
		return o.err
	}
	var unknown []string
	for k := range o.raw {
		if !o.used[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("mixer: unknown option(s) %s for kind %q", strings.Join(unknown, ", "), o.Kind)
	}
	return nil
}

// Raw returns the options as a JSON object including "kind", for saving.
func (o Options) Raw() map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for k, v := range o.raw {
		m[k] = v
	}
	kb, _ := json.Marshal(o.Kind)
	m["kind"] = kb
	return m
}
