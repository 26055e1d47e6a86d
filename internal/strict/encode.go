package strict

import (
	"bytes"
	"encoding/json"
)

// Marshal writes v as compact JSON (encoding/json's rules: struct fields
// by their json tags, map keys sorted).
func Marshal(v any) ([]byte, error) { return json.Marshal(v) }

// MarshalIndent writes v as JSON indented by two spaces.
func MarshalIndent(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }

// Canonical writes v as JSON indented by two spaces with the keys of every
// object, a struct's included, in sorted order, and numbers as Marshal
// writes them: values that marshal alike give equal bytes, whatever the
// order of their fields.
func Canonical(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return nil, err
	}
	return json.MarshalIndent(x, "", "  ")
}
