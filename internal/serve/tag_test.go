package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/mixer"
)

// names is a toy tagging task: names (PER) and places (LOC) among common
// words, some with a multi-byte character.
func names(n int, seed uint64) []tokenmix.Example {
	rng := rand.New(rand.NewPCG(seed, 9))
	per := strings.Fields("alice bob chloé dmitri eve")
	loc := strings.Fields("paris oslo zürich lima rome")
	common := strings.Fields("met in and saw the at from")
	out := make([]tokenmix.Example, n)
	for i := range out {
		var text strings.Builder
		spans := []tokenmix.Span{}
		for w := range 4 + rng.IntN(4) {
			if w > 0 {
				text.WriteByte(' ')
			}
			word, label := common[rng.IntN(len(common))], ""
			switch rng.IntN(3) {
			case 0:
				word, label = per[rng.IntN(len(per))], "PER"
			case 1:
				word, label = loc[rng.IntN(len(loc))], "LOC"
			}
			if label != "" {
				spans = append(spans, tokenmix.Span{Start: text.Len(), End: text.Len() + len(word), Label: label})
			}
			text.WriteString(word)
		}
		out[i] = tokenmix.Example{Text: text.String(), Spans: spans}
	}
	return out
}

// TestTagEndpoint: /v1/tag answers what Model.Tag (texts) and TagTokens
// (token ids) give, batched with other requests.
func TestTagEndpoint(t *testing.T) {
	cfg := tokenmix.TrainConfig{Mixer: mixer.OptionsOf("aft_conv", map[string]any{"window": 15}), Train: tokenmix.TrainSettings{Steps: 300, LR: 5e-3}}
	r, err := tokenmix.Train(context.Background(), cfg, tokenmix.Examples(names(400, 1)))
	if err != nil {
		t.Fatal(err)
	}
	tagger, err := r.Model()
	if err != nil {
		t.Fatal(err)
	}
	models := loadModels(t)
	models["names"] = tagger
	ts := start(t, Config{}, models)
	defer ts.stop(t)
	texts := []string{"chloé met bob in zürich", "the rome"}
	want, err := tagger.Tag(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(want[0]) == "[]" {
		t.Fatalf("the tagger found nothing in %q", texts[0])
	}
	for _, body := range []string{`{"model": "names", "inputs": ["chloé met bob in zürich", "the rome"]}`,
		fmt.Sprintf(`{"model": "names", "tokens": [%s, %s]}`, ids(tagger.Encode(texts[0])), ids(tagger.Encode(texts[1])))} {
		code, _, b := ts.post(t, "/v1/tag", body)
		var resp struct {
			Model   string
			Results []struct{ Spans []tokenmix.Span }
		}
		if code != 200 || json.Unmarshal(b, &resp) != nil || resp.Model != "names" || len(resp.Results) != 2 {
			t.Fatalf("%s: %d %s", body, code, b)
		}
		for i := range texts {
			if fmt.Sprint(resp.Results[i].Spans) != fmt.Sprint(want[i]) {
				t.Errorf("%s: input %d: spans %v, want %v", body, i, resp.Results[i].Spans, want[i])
			}
		}
	}
	resp, err := ts.client.Get(ts.url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"id":"names"`) || !strings.Contains(string(b), `"task":"tag"`) {
		t.Errorf("models: %s", b)
	}
}

func ids(s []int32) string {
	b, _ := json.Marshal(s)
	return string(b)
}
