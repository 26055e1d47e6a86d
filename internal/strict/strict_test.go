package strict

import (
	"fmt"
	"testing"
)

type inner struct {
	N int     `json:"n"`
	F float64 `json:"f,omitempty"`
}

// named reads "name" itself and the other keys by Fields.
type named struct {
	Name string
	In   inner `json:"in"`
}

func (n *named) UnmarshalStrict(o *Object) error {
	o.String("name", &n.Name)
	if n.Name == "bad" {
		o.Fail("name", "not bad")
		return nil
	}
	return o.Fields(n)
}

type outer struct {
	A     int               `json:"a"`
	P     *bool             `json:"p,omitempty"`
	In    inner             `json:"in"`
	M     map[string]int    `json:"m"`
	MS    map[string]inner  `json:"ms"`
	L     []inner           `json:"l"`
	Raw   RawMessage        `json:"raw"`
	Any   map[string]any    `json:"any"`
	Named named             `json:"named"`
	U     uint64            `json:"u"`
	Plain string            // read as "Plain"
	skip  int               //nolint:unused // unexported: never read
	Dash  int               `json:"-"`
	Keys  map[string]string `json:"keys,omitempty"`
}

// TestStruct: Struct reads every depth strictly, naming the key by its
// path; good input decodes fully.
func TestStruct(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a": null}`, "a: want an integer, got null"},
		{`{"a": "x"}`, `a: want an integer, got "x"`},
		{`{"b": 1}`, "b: unknown key"},
		{`{"b": 1, "c": 2}`, "b, c: unknown keys"},
		{`{"p": null}`, "p: want true or false, got null"},
		{`{"p": 1}`, "p: want true or false, got 1"},
		{`{"in": null}`, "in: want a JSON object, got null"},
		{`{"in": 3}`, "in: want a JSON object, got 3"},
		{`{"in": {"n": null}}`, "in.n: want an integer, got null"},
		{`{"in": {"n": 1.5}}`, "in.n: want an integer, got 1.5"},
		{`{"in": {"nn": 1}}`, "in.nn: unknown key"},
		{`{"m": {"x": null}}`, "m.x: want an integer, got null"},
		{`{"m": {"x": true}}`, "m.x: want an integer, got true"},
		{`{"ms": {"x": {"n": 1, "g": 2}}}`, "ms.x.g: unknown key"},
		{`{"l": {}}`, "l: want a list, got {}"},
		{`{"l": [{"n": 1}, null]}`, "l[1]: want a JSON object, got null"},
		{`{"l": [{"n": 1}, {"n": "2"}]}`, `l[1].n: want an integer, got "2"`},
		{`{"raw": null}`, "raw: want a value, got null"},
		{`{"any": {"k": null}}`, "any.k: want a value, got null"},
		{`{"named": {"name": 3}}`, "named.name: want a string, got 3"},
		{`{"named": {"name": "bad"}}`, "named.name: not bad"},
		{`{"named": {"name": "x", "in": {"n": "y"}}}`, `named.in.n: want an integer, got "y"`},
		{`{"named": {"name": "x", "out": 1}}`, "named.out: unknown key"},
		{`{"u": -1}`, "u: want an integer, got -1"},
		{`{"plain": "x"}`, "plain: unknown key"},
		{`{"skip": 1}`, "skip: unknown key"},
		{`{"Dash": 1}`, "Dash: unknown key"},
		{`[]`, "config: want a JSON object (json: cannot unmarshal array into Go value of type map[string]json.RawMessage)"},
		{`{"a": 1} {}`, "config: trailing data after the JSON object"},
	} {
		var o outer
		err := Struct("", []byte(c.in), &o)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v, want %q", c.in, err, c.want)
		}
	}
	var o outer
	in := `{"a": 1, "p": false, "in": {"n": 2, "f": 0.5}, "m": {"x": 3}, "ms": {"y": {"n": 4}}, "l": [{"n": 5}],
		"raw": [1, {"b": null}], "any": {"k": [1, "s"]}, "named": {"name": "nm", "in": {"n": 6}}, "u": 7, "Plain": "pl", "keys": {}}`
	if err := Struct("x.", []byte(in), &o); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%d %v %v %v %v %v %s %v %+v %d %s %v", o.A, *o.P, o.In, o.M, o.MS, o.L, o.Raw, o.Any, o.Named, o.U, o.Plain, o.Keys)
	want := `1 false {2 0.5} map[x:3] map[y:{4 0}] [{5 0}] [1, {"b": null}] map[k:[1 s]] {Name:nm In:{N:6 F:0}} 7 pl map[]`
	if got != want {
		t.Errorf("decoded\n%s\nwant\n%s", got, want)
	}
	if err := Struct("x.", []byte(`{"in": {"n": "no"}}`), &o); err == nil || err.Error() != `x.in.n: want an integer, got "no"` {
		t.Errorf("path prefix: %v", err)
	}
}

// TestCanonical: keys sorted at every depth, struct fields included;
// numbers as Marshal writes them.
func TestCanonical(t *testing.T) {
	v := struct {
		Z int            `json:"z"`
		A map[string]any `json:"a"`
		R RawMessage     `json:"r"`
	}{Z: 1, A: map[string]any{"y": 0.0003, "b": uint64(1 << 62)}, R: RawMessage(`{"d": 1e3, "c": 2}`)}
	b, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\": {\n    \"b\": 4611686018427387904,\n    \"y\": 0.0003\n  },\n  \"r\": {\n    \"c\": 2,\n    \"d\": 1e3\n  },\n  \"z\": 1\n}"
	if string(b) != want {
		t.Errorf("Canonical:\n%s\nwant\n%s", b, want)
	}
}
