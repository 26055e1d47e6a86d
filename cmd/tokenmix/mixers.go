package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// mixerInfo is one line of `tokenmix mixers --json`.
type mixerInfo struct {
	Name          string             `json:"name"`
	Paper         string             `json:"paper"`
	Causal        bool               `json:"causal"`
	Bidirectional bool               `json:"bidirectional"`
	KeyPadding    bool               `json:"key_padding"`
	Options       []mixer.OptionSpec `json:"options"`
}

// runMixers is `tokenmix mixers`: every registered kind with its paper,
// capabilities and options (mixer.Describe).
func runMixers(ctx context.Context, args []string) error {
	fs := newFlags("mixers")
	asJSON := fs.Bool("json", false, "print one JSON object per kind")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return wantUsage(fs)
	}
	enc := json.NewEncoder(os.Stdout)
	for _, k := range registry.All() {
		in := mixerInfo{k.Name, k.Paper, k.Causal, k.Bidirectional, k.KeyPadding, mixer.Describe(k)}
		if in.Options == nil {
			in.Options = []mixer.OptionSpec{}
		}
		if *asJSON {
			if err := enc.Encode(in); err != nil {
				return err
			}
			continue
		}
		var caps []string
		for _, c := range []struct {
			ok   bool
			name string
		}{{k.Causal, "causal"}, {k.Bidirectional, "bidirectional"}, {k.KeyPadding, "key padding"}} {
			if c.ok {
				caps = append(caps, c.name)
			}
		}
		fmt.Printf("%s\n  %s\n  supports: %s\n", k.Name, k.Paper, strings.Join(caps, ", "))
		for _, o := range in.Options {
			fmt.Printf("  option %-12s %-8s %s\n", o.Key, o.Type, optionDefault(o))
		}
		fmt.Printf("  config: \"mixer\": {\"kind\": %q%s}\n\n", k.Name, requiredExample(in.Options))
	}
	return nil
}

func optionDefault(o mixer.OptionSpec) string {
	switch {
	case o.Required:
		return "required"
	case o.DefaultFrom != "":
		return "default: " + o.DefaultFrom
	}
	b, _ := json.Marshal(o.Default)
	return "default " + string(b)
}

// requiredExample spells the required options of a config example, with
// placeholder values.
func requiredExample(opts []mixer.OptionSpec) string {
	var s string
	for _, o := range opts {
		if o.Required {
			s += fmt.Sprintf(", %q: <%s>", o.Key, o.Type)
		}
	}
	return s
}
