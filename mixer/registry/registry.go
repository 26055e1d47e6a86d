// Package registry is the one explicit list of tokenmix's token mixers.
//
// A new mixer joins by adding one entry to All; the model, the CLI, the
// conformance suite and the arena all find it here. There are no init()
// side effects.
package registry

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tokenmix/tokenmix/internal/mixer/aft"
	"github.com/tokenmix/tokenmix/internal/mixer/entmax"
	"github.com/tokenmix/tokenmix/internal/mixer/fnet"
	"github.com/tokenmix/tokenmix/internal/mixer/full"
	"github.com/tokenmix/tokenmix/internal/mixer/lsh"
	"github.com/tokenmix/tokenmix/internal/mixer/sparse"
	"github.com/tokenmix/tokenmix/internal/mixer/topk"
	"github.com/tokenmix/tokenmix/mixer"
)

// All returns every registered mixer kind, in a fixed order.
func All() []mixer.Kind {
	return []mixer.Kind{
		full.Kind(),
		lsh.Kind(),
		sparse.Strided(),
		sparse.Fixed(),
		entmax.Kind(),
		topk.Kind(),
		aft.FullKind(),
		aft.SimpleKind(),
		aft.LocalKind(),
		aft.ConvKind(),
		fnet.Kind(),
	}
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
