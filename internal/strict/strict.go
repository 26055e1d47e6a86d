// Package strict is tokenmix's one JSON options decoder: the model config,
// its "train" and "mixer" objects, arena presets, task configs and the
// arena's saved results are all read with it, so they fail alike. A key
// nobody reads, a null, a value of the wrong type and a value out of range
// are each an error naming the key by its path ("train.lr", "mixer.block",
// "task.len"):
//
//	train.lr: want a number, got "fast"
//	mixer.block: want an integer, got null
//	task.lenn: unknown key
//	model.d_model: must be ≥ 1, got 0
//
// Object reads an object key by key; Struct reads one into a typed struct
// by its json tags, nested structs, maps and lists included. Marshal,
// MarshalIndent and Canonical write JSON, so that a package reading with
// strict needs no other JSON import.
package strict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
)

// Object reads one JSON object's keys. Each getter marks its key as read;
// the first type or value error is kept, and Err reports it or the keys
// that were never read.
type Object struct {
	path string // prefix of every key in messages, e.g. "train."
	raw  map[string]json.RawMessage
	used map[string]bool
	err  error
	// Hint is appended to the unknown-key error (e.g. where the known keys
	// are listed).
	Hint string
	// Observe, when set, is called by every getter with the key, the type
	// it asks for ("" for Has) and the default it was given (a pointer's
	// value before decoding); Failed by Fail. Package mixer uses them to
	// describe a kind's options.
	Observe func(key, typ string, def any)
	Failed  func(key string)
}

// Parse reads data, which must be one JSON object and nothing after it.
// path prefixes the keys in messages ("" at the top level, "train." for
// the train object).
func Parse(path string, data []byte) (*Object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return nil, fmt.Errorf("%s: want a JSON object (%s)", name(path), brief(err, data))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: trailing data after the JSON object", name(path))
	}
	return New(path, raw), nil
}

// New reads an already split object (nil is an empty one).
func New(path string, raw map[string]json.RawMessage) *Object {
	if raw == nil {
		raw = map[string]json.RawMessage{}
	}
	return &Object{path: path, raw: raw, used: map[string]bool{}}
}

// name is a path without its trailing dot, or "config" at the top.
func name(path string) string {
	if path == "" {
		return "config"
	}
	return strings.TrimSuffix(path, ".")
}

func brief(err error, data []byte) string {
	if err != nil {
		return err.Error()
	}
	return "got " + clip(data)
}

func clip(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 40 {
		return string(b[:37]) + "..."
	}
	return string(b)
}

// Has reports whether key is present (null included).
func (o *Object) Has(key string) bool {
	if o.Observe != nil {
		o.Observe(key, "", nil)
	}
	_, ok := o.raw[key]
	return ok
}

// Raw returns key's raw JSON and marks it read.
func (o *Object) Raw(key string) (json.RawMessage, bool) {
	o.used[key] = true
	r, ok := o.raw[key]
	return r, ok
}

// get decodes key into dst (a pointer) when present, reporting presence.
func (o *Object) get(key string, dst any, typ string) bool {
	o.used[key] = true
	if o.Observe != nil {
		o.Observe(key, typ, reflect.ValueOf(dst).Elem().Interface())
	}
	r, ok := o.raw[key]
	if !ok {
		return false
	}
	if string(bytes.TrimSpace(r)) == "null" {
		o.Fail(key, "want %s, got null", article(typ))
		return true
	}
	if err := json.Unmarshal(r, dst); err != nil {
		o.Fail(key, "want %s, got %s", article(typ), clip(r))
	}
	return true
}

func article(typ string) string {
	switch typ {
	case "integer":
		return "an integer"
	case "boolean":
		return "true or false"
	case "object":
		return "a JSON object"
	}
	return "a " + typ
}

// Int reads key as an integer into dst, leaving dst when absent; it
// reports whether key is present. Float, Int64, Bool and String likewise.
func (o *Object) Int(key string, dst *int) bool       { return o.get(key, dst, "integer") }
func (o *Object) Int64(key string, dst *int64) bool   { return o.get(key, dst, "integer") }
func (o *Object) Float(key string, dst *float64) bool { return o.get(key, dst, "number") }
func (o *Object) Bool(key string, dst *bool) bool     { return o.get(key, dst, "boolean") }
func (o *Object) String(key string, dst *string) bool { return o.get(key, dst, "string") }

// Object reads key as a JSON object's raw bytes.
func (o *Object) Object(key string, dst *json.RawMessage) bool {
	r, ok := o.Raw(key)
	if ok {
		if t := bytes.TrimSpace(r); len(t) == 0 || t[0] != '{' {
			o.Fail(key, "want a JSON object, got %s", clip(r))
		}
		*dst = r
	}
	return ok
}

// IntRequired is Int for a key that must be present.
func (o *Object) IntRequired(key string, dst *int) {
	if !o.Int(key, dst) {
		o.Fail(key, "required")
	}
}

// Fail records an error for key (the first error wins).
func (o *Object) Fail(key, format string, args ...any) {
	if o.Failed != nil {
		o.Failed(key)
	}
	if o.err == nil {
		o.err = fmt.Errorf("%s%s: %s", o.path, key, fmt.Sprintf(format, args...))
	}
}

// Err returns the first error, or one naming every key never read.
func (o *Object) Err() error {
	if o.err != nil {
		return o.err
	}
	var unknown []string
	for k := range o.raw {
		if !o.used[k] {
			unknown = append(unknown, o.path+k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	msg := "unknown key"
	if len(unknown) > 1 {
		msg += "s"
	}
	if o.Hint != "" {
		msg += " (" + o.Hint + ")"
	}
	return fmt.Errorf("%s: %s", strings.Join(unknown, ", "), msg)
}

// Peek returns key's raw JSON without marking it read.
func (o *Object) Peek(key string) (json.RawMessage, bool) {
	r, ok := o.raw[key]
	return r, ok
}

// Keys returns the object's keys, read or not.
func (o *Object) Keys() []string {
	ks := make([]string, 0, len(o.raw))
	for k := range o.raw {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
