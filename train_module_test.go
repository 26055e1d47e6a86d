package tokenmix_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// userModule copies the Go files of testdata/<name> into a new module
// that requires github.com/tokenmix/tokenmix, replaced by this checkout,
// and returns its directory.
func userModule(t *testing.T, name string) string {
	t.Helper()
	repo, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", name, "*.go"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(mod, filepath.Base(f)), b, 0o644)
	}
	sum, _ := os.ReadFile("go.sum")
	os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644)
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte(fmt.Sprintf(
		"module example.com/%s\n\ngo 1.26\n\nrequire github.com/tokenmix/tokenmix v0.0.0\n\nreplace github.com/tokenmix/tokenmix => %s\n", name, repo)), 0o644)
	return mod
}

// TestTrainModule runs the tests of testdata/trainmodule, a separate
// module that trains through tokenmix.Train (with a mixer kind of its
// own), under the race detector where the toolchain has one.
func TestTrainModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and tests a separate module")
	}
	mod := userModule(t, "trainmodule")
	args := []string{"test", "-count=1", "-v"}
	if raceSupported() {
		args = append(args, "-race")
	}
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append(args, "./...")...)
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	t.Logf("go %v:\n%s", args, out)
	if err != nil {
		t.Fatalf("the module's tests: %v", err)
	}
}

// raceSupported says whether `go test -race` can build here (it needs cgo
// and a C compiler on linux/amd64).
func raceSupported() bool {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		return false
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		return false
	}
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "env", "CGO_ENABLED").Output()
	return err == nil && string(out) == "1\n"
}
