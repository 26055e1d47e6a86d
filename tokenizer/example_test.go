package tokenizer_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tokenmix/tokenmix/tokenizer"
)

// Train a small vocabulary, encode and decode with it, and save it as a
// tokenizer.json that tokenmix and the Hugging Face libraries read.
func ExampleTrain() {
	docs := []string{
		"the cat sat on the mat",
		"the dog sat on the log",
		"the cat and the dog",
	}
	tk, err := tokenizer.Train(docs, tokenizer.TrainOptions{VocabSize: 270, Special: []string{"<|endoftext|>"}})
	if err != nil {
		panic(err)
	}
	ids := tk.Encode("the cat sat")
	text, _ := tk.Decode(ids)
	fmt.Println(len(ids), "tokens for", len("the cat sat"), "bytes:", text)
	fmt.Println(tk.EncodeSpecial("the<|endoftext|>")[1:])

	path := filepath.Join(os.TempDir(), "example-tokenizer.json")
	f, _ := os.Create(path)
	defer os.Remove(path)
	if err := tk.WriteJSON(f); err != nil {
		panic(err)
	}
	f.Close()
	back, err := tokenizer.Open(path, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(back.VocabSize(), back.Pattern())
	// Output:
	// 3 tokens for 11 bytes: the cat sat
	// [269]
	// 270 cl100k
}
