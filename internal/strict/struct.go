package strict

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// RawMessage is a raw JSON value, kept as written for a reader that comes
// later (a task reads its own keys).
type RawMessage = json.RawMessage

// Unmarshaler is a type that reads itself from a JSON object. Struct calls
// UnmarshalStrict for a value of such a type, at any depth, with the
// object's keys named by their path; the keys it leaves unread are errors,
// as is any error it records with Fail.
type Unmarshaler interface {
	UnmarshalStrict(o *Object) error
}

var (
	rawType         = reflect.TypeFor[RawMessage]()
	unmarshalerType = reflect.TypeFor[Unmarshaler]()
)

// Struct decodes the JSON object data into *dst, a struct or an
// Unmarshaler, by its fields' json tags (an untagged field by its name).
// It is as strict as Object at every depth: a key no field names, a null,
// and a value of the wrong type are errors naming the key by its path
// ("jobs", "model.d_model", "mixer_steps.full", "curve[2].step"). A
// struct, a map with string keys, a list, a pointer or an Unmarshaler
// inside dst is read the same way; a RawMessage keeps its value as
// written; an `any` takes what encoding/json gives it. path prefixes the
// keys as in Parse.
func Struct(path string, data []byte, dst any) error {
	o, err := Parse(path, data)
	if err != nil {
		return err
	}
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("%s: strict.Struct needs a non-nil pointer, got %T", name(path), dst)
	}
	return o.into(v.Elem())
}

// Fields decodes the keys of o that name fields of the struct *dst (by
// json tag, else by field name) as Struct does, and marks them read; the
// other keys stay unread for Err to report. An Unmarshaler calls it for
// the keys it does not read itself. It returns the first error.
func (o *Object) Fields(dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("%s: Fields needs a pointer to a struct, got %T", name(o.path), dst)
	}
	return o.fields(v.Elem())
}

// into decodes the whole object into v (addressable), then reports the
// first error or the keys never read.
func (o *Object) into(v reflect.Value) error {
	var err error
	switch {
	case v.Addr().Type().Implements(unmarshalerType):
		err = v.Addr().Interface().(Unmarshaler).UnmarshalStrict(o)
	case v.Kind() == reflect.Struct:
		err = o.fields(v)
	case v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String:
		m := reflect.MakeMapWithSize(v.Type(), len(o.raw))
		for _, k := range o.Keys() {
			e := reflect.New(v.Type().Elem()).Elem()
			o.used[k] = true
			if err = decodeValue(o.path+k, o.raw[k], e); err != nil {
				break
			}
			m.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
		}
		v.Set(m)
	default:
		err = fmt.Errorf("%s: cannot decode a JSON object into a Go %s", name(o.path), v.Type())
	}
	if err != nil {
		return err
	}
	return o.Err()
}

func (o *Object) fields(v reflect.Value) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key, ok := jsonName(f)
		if !ok {
			continue
		}
		r, present := o.raw[key]
		if !present {
			continue
		}
		o.used[key] = true
		if err := decodeValue(o.path+key, r, v.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

// jsonName is the key of struct field f: its json tag's name, else its
// name; ok is false for an unexported field and a field tagged "-".
func jsonName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	n, _, _ := strings.Cut(tag, ",")
	if n == "" {
		n = f.Name
	}
	return n, true
}

// decodeValue decodes raw into v (addressable); key is the value's path.
func decodeValue(key string, raw RawMessage, v reflect.Value) error {
	t := bytes.TrimSpace(raw)
	if string(t) == "null" {
		return fmt.Errorf("%s: want %s, got null", key, article(kindName(v.Type())))
	}
	switch {
	case v.Type() == rawType:
		v.SetBytes(append([]byte(nil), t...))
		return nil
	case v.Addr().Type().Implements(unmarshalerType),
		v.Kind() == reflect.Struct,
		v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String:
		if len(t) == 0 || t[0] != '{' {
			return fmt.Errorf("%s: want a JSON object, got %s", key, clip(raw))
		}
		o, err := Parse(key+".", raw)
		if err != nil {
			return err
		}
		return o.into(v)
	case v.Kind() == reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		if err := decodeValue(key, raw, e.Elem()); err != nil {
			return err
		}
		v.Set(e)
		return nil
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() != reflect.Uint8:
		var items []RawMessage
		if len(t) == 0 || t[0] != '[' || json.Unmarshal(raw, &items) != nil {
			return fmt.Errorf("%s: want a list, got %s", key, clip(raw))
		}
		s := reflect.MakeSlice(v.Type(), len(items), len(items))
		for i, r := range items {
			if err := decodeValue(fmt.Sprintf("%s[%d]", key, i), r, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
	if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
		return fmt.Errorf("%s: want %s, got %s", key, article(kindName(v.Type())), clip(raw))
	}
	return nil
}

// kindName names a Go type as Object's messages do.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Pointer:
		return kindName(t.Elem())
	case reflect.Interface:
		return "value"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 { // RawMessage
			return "value"
		}
		return "list"
	case reflect.Array:
		return "list"
	}
	return t.String()
}
