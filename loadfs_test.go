package tokenmix_test

import (
	"context"
	"embed"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/tokenmix/tokenmix"
)

//go:embed testdata/spam
var shipped embed.FS

// A model shipped inside the binary: an export embedded with go:embed.
func ExampleLoadFS() {
	m, err := tokenmix.LoadFS(shipped, "testdata/spam")
	if err != nil {
		log.Fatal(err)
	}
	preds, err := m.Classify(context.Background(), [][]int32{m.Encode("claim your free prize now")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(preds[0].Name)
	// Output: spam
}

// TestLoadFS: a run directory loads from an fs.FS as from disk (its
// newest checkpoint, or WithCheckpoint's), and a directory that holds no
// model is an error naming the file.
func TestLoadFS(t *testing.T) {
	dir := t.TempDir()
	cfg := tokenmix.TrainConfig{Train: tokenmix.TrainSettings{Steps: 6, CheckpointEvery: 3, KeepCheckpoints: 5}}
	if _, err := tokenmix.Train(context.Background(), cfg, tokenmix.Examples(shopping()), tokenmix.WithOutDir(dir)); err != nil {
		t.Fatal(err)
	}
	fsys := os.DirFS(dir)
	for _, c := range []struct {
		opts []tokenmix.Option
		step int
	}{{nil, 6}, {[]tokenmix.Option{tokenmix.WithCheckpoint(3)}, 3}} {
		m, err := tokenmix.LoadFS(fsys, ".", c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := tokenmix.Load(dir, c.opts...)
		a, _ := m.Logits(context.Background(), [][]int32{m.Encode("today I bought a fig")})
		b, _ := d.Logits(context.Background(), [][]int32{d.Encode("today I bought a fig")})
		if m.Config().Step != c.step || fmt.Sprint(a.Data) != fmt.Sprint(b.Data) {
			t.Errorf("LoadFS at step %d: step %d, logits %v, from disk %v", c.step, m.Config().Step, a.Data, b.Data)
		}
	}
	if _, err := tokenmix.LoadFS(fstest.MapFS{"x/y": {Data: []byte("z")}}, "x"); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("LoadFS of a directory without a model: %v", err)
	}
	if _, err := tokenmix.LoadFS(fsys, "../up"); err == nil {
		t.Error("LoadFS of an invalid path: no error")
	}
}
