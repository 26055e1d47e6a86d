// Package registry is the one explicit list of tokenmix's token mixers.
//
// A built-in mixer joins through its package's Kinds(), listed once in
// builtins; the model, the CLI, the conformance suite and the arena all find
// it here. A program adds
// its own kinds with Add, once, before it builds models; there are no
// init() side effects.
package registry

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tokenmix/tokenmix/internal/mixer/aft"
	"github.com/tokenmix/tokenmix/internal/mixer/entmax"
	"github.com/tokenmix/tokenmix/internal/mixer/fnet"
	"github.com/tokenmix/tokenmix/internal/mixer/full"
	"github.com/tokenmix/tokenmix/internal/mixer/lsh"
	"github.com/tokenmix/tokenmix/internal/mixer/sparse"
	"github.com/tokenmix/tokenmix/internal/mixer/topk"
	"github.com/tokenmix/tokenmix/mixer"
)

// builtins lists tokenmix's own kinds, package by package, in a fixed
// order.
func builtins() []mixer.Kind {
	var ks []mixer.Kind
	for _, pkg := range [][]mixer.Kind{full.Kinds(), lsh.Kinds(), sparse.Kinds(), entmax.Kinds(), topk.Kinds(), aft.Kinds(), fnet.Kinds()} {
		ks = append(ks, pkg...)
	}
	return ks
}

var (
	mu    sync.RWMutex
	added []mixer.Kind
)

// All returns every registered kind: the built-in ones in a fixed order,
// then those added with Add, in the order added.
func All() []mixer.Kind {
	mu.RLock()
	defer mu.RUnlock()
	return append(builtins(), added...)
}

// Add registers kinds defined outside tokenmix. It returns an error, and
// registers none of them, when a kind has no name or a taken one, lacks a
// constructor or a paper, supports neither masking mode, or declares no
// test cases (mixer.Kind.Tests: the conformance suite runs them).
func Add(kinds ...mixer.Kind) error {
	mu.Lock()
	defer mu.Unlock()
	taken := map[string]bool{}
	for _, k := range append(builtins(), added...) {
		taken[k.Name] = true
	}
	for _, k := range kinds {
		switch {
		case k.Name == "":
			return fmt.Errorf("registry: a kind without a name")
		case taken[k.Name]:
			return fmt.Errorf("registry: kind %q is already registered", k.Name)
		case k.New32 == nil || k.New64 == nil:
			return fmt.Errorf("registry: kind %q lacks New32 or New64", k.Name)
		case k.Paper == "":
			return fmt.Errorf("registry: kind %q has no paper", k.Name)
		case !k.Causal && !k.Bidirectional:
			return fmt.Errorf("registry: kind %q supports neither causal nor bidirectional masking", k.Name)
		case len(k.Tests) == 0:
			return fmt.Errorf("registry: kind %q declares no test cases (mixer.Kind.Tests)", k.Name)
		}
		taken[k.Name] = true
	}
	added = append(added, kinds...)
	return nil
}

// Lookup returns the kind named name, or an error listing the known kinds.
func Lookup(name string) (mixer.Kind, error) {
	var names []string
	for _, k := range All() {
		if k.Name == name {
			return k, nil
		}
		names = append(names, k.Name)
	}
	sort.Strings(names)
	return mixer.Kind{}, fmt.Errorf("mixer.kind: unknown kind %q (known: %s)", name, strings.Join(names, ", "))
}
