package mixer

import "reflect"

// OptionSpec describes one option of a kind: its key, its JSON type and its
// default, as the kind's constructor reads them.
type OptionSpec struct {
	Key string `json:"key"`
	// Type is "integer", "number", "boolean" or "string".
	Type string `json:"type"`
	// Default is the value used when the key is absent; nil when Required
	// or DefaultFrom is set.
	Default any `json:"default,omitempty"`
	// DefaultFrom names the model config key whose value is the default
	// (for example "n_heads").
	DefaultFrom string `json:"default_from,omitempty"`
	// Required says the kind has no default: the key must be given.
	Required bool `json:"required,omitempty"`
}

// Describe returns the options kind k accepts, in the order its constructor
// reads them. It builds k twice with no options, on two model shapes, and
// records every option the constructor asks for: a default that follows
// the shape is reported by the config key it comes from, and a key whose
// absence the constructor rejects is reported as required. Describe does
// not run the mixer.
func Describe(k Kind) []OptionSpec {
	shapes := []Config{
		{D: 64, Heads: 4, MaxLen: 256, NLayers: 2},
		{D: 96, Heads: 3, MaxLen: 512, NLayers: 3},
	}
	var recs [2]*recorder
	for i, c := range shapes {
		c.Causal = !k.Bidirectional
		recs[i] = &recorder{failed: map[string]bool{}}
		c.Opts = NewOptions(k.Name, nil)
		c.Opts.o.Observe, c.Opts.o.Failed = recs[i].note, recs[i].fail
		if k.New64 != nil {
			k.New64(c)
		}
	}
	var out []OptionSpec
	for _, s := range recs[0].specs {
		if s.Type == "" { // only asked whether present
			continue
		}
		s.Required = recs[0].failed[s.Key]
		other := recs[1].find(s.Key)
		switch {
		case s.Required:
			s.Default = nil
		case other != nil && !reflect.DeepEqual(other.Default, s.Default):
			s.DefaultFrom = shapeKey(shapes[0], s.Default)
			s.Default = nil
		}
		out = append(out, s)
	}
	return out
}

// shapeKey names the Config field (by its model config key) equal to v.
func shapeKey(c Config, v any) string {
	n, ok := v.(int)
	switch {
	case !ok:
		return "the model config"
	case n == c.D:
		return "d_model"
	case n == c.Heads:
		return "n_heads"
	case n == c.MaxLen:
		return "max_len"
	case n == c.NLayers:
		return "n_layers"
	}
	return "the model config"
}

// recorder collects what a constructor asks of its Options.
type recorder struct {
	specs  []OptionSpec
	failed map[string]bool
}

func (r *recorder) find(key string) *OptionSpec {
	for i := range r.specs {
		if r.specs[i].Key == key {
			return &r.specs[i]
		}
	}
	return nil
}

// note records that the constructor read key as typ with default def, or
// only asked whether key is present (typ "").
func (r *recorder) note(key, typ string, def any) {
	s := r.find(key)
	if s == nil {
		r.specs = append(r.specs, OptionSpec{Key: key})
		s = &r.specs[len(r.specs)-1]
	}
	if typ != "" && s.Type == "" {
		s.Type, s.Default = typ, def
	}
}

func (r *recorder) fail(key string) { r.failed[key] = true }
