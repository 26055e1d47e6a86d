package data

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
)

// FMNISTDir is where Debian's dataset-fashion-mnist package installs the
// Fashion-MNIST IDX files.
const FMNISTDir = "/usr/share/datasets/fashion-mnist"

// FMNISTConfig selects the Fashion-MNIST files and split sizes.
type FMNISTConfig struct {
	// DataDir holds train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
	// t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (the files
	// may also be uncompressed, without .gz). Empty means FMNISTDir.
	DataDir string `json:"data_dir"`
	// Val is the number of training images held out for validation (5000
	// when 0); Train caps the rest (0 = all); Test caps the official 10,000
	// test images (0 = all).
	Val   int `json:"val"`
	Train int `json:"train"`
	Test  int `json:"test"`
	// Seed picks the validation images (a seeded permutation of the 60,000).
	Seed uint64 `json:"seed"`
}

// FMNIST is sequential Fashion-MNIST: each 28×28 image is read row by row as
// 784 pixel tokens (token = intensity 0–255), and the target is its class
// (0–9). Validation is a seeded random subset of the official training set;
// test is the official test set.
type FMNIST struct {
	cfg    FMNISTConfig
	pix    [3][]byte // per split, [N,784]
	labels [3][]byte
}

// FMNISTLen is the sequence length of sequential Fashion-MNIST.
const FMNISTLen = 28 * 28

// ErrNoFMNIST is wrapped by the error NewFMNIST returns when the files are
// missing.
var ErrNoFMNIST = errors.New("Fashion-MNIST files not found: install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist) or pass --data-dir")

// NewFMNIST reads Fashion-MNIST. Its errors are KeyErrors: a missing file
// gives one about data_dir wrapping ErrNoFMNIST, a malformed file one about
// data_dir naming the file.
func NewFMNIST(c FMNISTConfig) (*FMNIST, error) {
	if c.DataDir == "" {
		c.DataDir = FMNISTDir
	}
	if c.Val == 0 {
		c.Val = 5000
	}
	if err := checkSplits("fmnist", c.Train, c.Val, c.Test); err != nil {
		return nil, err
	}
	trX, trY, err := readFMNISTPair(c.DataDir, "train")
	if err != nil {
		return nil, &KeyError{Prefix: "fmnist", Key: "data_dir", Err: err}
	}
	teX, teY, err := readFMNISTPair(c.DataDir, "t10k")
	if err != nil {
		return nil, &KeyError{Prefix: "fmnist", Key: "data_dir", Err: err}
	}
	n := len(trY)
	if c.Val >= n {
		return nil, keyErr("fmnist", "val", "want < %d, the training images, got %d", n, c.Val)
	}
	f := &FMNIST{cfg: c}
	perm := rand.New(rand.NewPCG(c.Seed, 0x464d4e495354)).Perm(n) // "FMNIST"
	val, train := perm[:c.Val], perm[c.Val:]
	if c.Train > 0 && c.Train < len(train) {
		train = train[:c.Train]
	}
	take := func(s Split, x, y []byte, idx []int) {
		f.pix[s] = make([]byte, 0, len(idx)*FMNISTLen)
		for _, i := range idx {
			f.pix[s] = append(f.pix[s], x[i*FMNISTLen:(i+1)*FMNISTLen]...)
			f.labels[s] = append(f.labels[s], y[i])
		}
	}
	// Keep the training images in file order: the loader shuffles them.
	slices.Sort(train)
	slices.Sort(val)
	take(Train, trX, trY, train)
	take(Val, trX, trY, val)
	nt := len(teY)
	if c.Test > 0 && c.Test < nt {
		nt = c.Test
	}
	f.pix[Test], f.labels[Test] = teX[:nt*FMNISTLen], teY[:nt]
	return f, nil
}

// readFMNISTPair reads <prefix>-images-idx3-ubyte[.gz] and the matching
// labels from dir; its errors name the file.
func readFMNISTPair(dir, prefix string) (x, y []byte, err error) {
	find := func(name string) (string, error) {
		for _, p := range []string{name + ".gz", name} {
			p = filepath.Join(dir, p)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			} else if !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
		}
		return "", fmt.Errorf("%s(.gz) not in %s: %w", name, dir, ErrNoFMNIST)
	}
	ip, err := find(prefix + "-images-idx3-ubyte")
	if err != nil {
		return nil, nil, err
	}
	lp, err := find(prefix + "-labels-idx1-ubyte")
	if err != nil {
		return nil, nil, err
	}
	im, err := ReadIDXFile(ip, IDXMagicImages)
	if err != nil {
		return nil, nil, err
	}
	lb, err := ReadIDXFile(lp, IDXMagicLabels)
	if err != nil {
		return nil, nil, err
	}
	if im.Dims[1] != 28 || im.Dims[2] != 28 {
		return nil, nil, fmt.Errorf("%s: images are %dx%d, want 28x28", ip, im.Dims[1], im.Dims[2])
	}
	if im.Dims[0] != lb.Dims[0] {
		return nil, nil, fmt.Errorf("%d images in %s but %d labels in %s", im.Dims[0], ip, lb.Dims[0], lp)
	}
	for i, v := range lb.Data {
		if v > 9 {
			return nil, nil, fmt.Errorf("%s: label %d of item %d is not in 0–9", lp, v, i)
		}
	}
	return im.Data, lb.Data, nil
}

// Info implements Task.
func (f *FMNIST) Info() Info {
	return Info{Name: "fmnist", Mode: Classify, Vocab: 256, Classes: 10, Chance: 0.1, PadID: -1,
		MaxLen: FMNISTLen, Metric: Accuracy, LabelNames: FMNISTLabels}
}

// FMNISTLabels names Fashion-MNIST's classes, as the dataset defines them.
var FMNISTLabels = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// Len implements Task.
func (f *FMNIST) Len(s Split) int { return len(f.labels[s]) }

// ExampleLen implements Task.
func (f *FMNIST) ExampleLen(Split, int) int { return FMNISTLen }

// Example implements Task.
func (f *FMNIST) Example(tokens, targets []int32, s Split, i int) {
	for j, p := range f.pix[s][i*FMNISTLen : (i+1)*FMNISTLen] {
		tokens[j] = int32(p)
	}
	targets[0] = int32(f.labels[s][i])
}
