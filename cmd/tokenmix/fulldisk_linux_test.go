package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// tmpfsEnv hands the child of TestTrainFullTmpfs its tmpfsJob.
const tmpfsEnv = "TOKENMIX_TEST_TMPFS"

// tmpfsJob is what the child does: mount a tmpfs of Size bytes on Mount,
// run tokenmix with Args, and copy the run directory Run (on the tmpfs)
// to Copy, where the parent can read it once the mount is gone.
type tmpfsJob struct {
	Mount     string
	Size      int64
	Args      []string
	Run, Copy string
}

// tmpfsSkip starts the child's stderr when it cannot mount.
const tmpfsSkip = "cannot mount a tmpfs: "

// tmpfsChild runs the job of tmpfsEnv when the environment holds one and
// returns the exit code, or ok false.
func tmpfsChild() (code int, ok bool) {
	spec := os.Getenv(tmpfsEnv)
	if spec == "" {
		return 0, false
	}
	var j tmpfsJob
	if err := json.Unmarshal([]byte(spec), &j); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3, true
	}
	if err := syscall.Mount("tmpfs", j.Mount, "tmpfs", 0, "size="+strconv.FormatInt(j.Size, 10)); err != nil {
		fmt.Fprintln(os.Stderr, tmpfsSkip+err.Error())
		return 3, true
	}
	code = execute(j.Args)
	if err := copyTree(j.Copy, j.Run); err != nil {
		fmt.Fprintln(os.Stderr, "copying the run out:", err)
		return 3, true
	}
	return code, true
}

// copyTree copies the directory tree src to dst.
func copyTree(dst, src string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

// treePages is the bytes the files under root take on a tmpfs: each file
// rounded up to 4 KiB pages.
func treePages(t *testing.T, root string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		n += (fi.Size() + 4095) &^ 4095
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTrainFullTmpfs trains on a real filesystem that fills up: a tmpfs,
// mounted in a mount namespace of a child process, with room for the run
// and one checkpoint and a half, so the checkpoint of step 4 finds the
// disk full while the one of step 2 is still there. With --on-save-error
// stop the child exits 1 naming the checkpoint's path and the few KiB
// left; with continue it logs a save_error line and trains on, and the
// last checkpoint, which finds the disk as full, ends it with exit 1.
// Either way the checkpoint of step 2 is the newest and verifies, and
// metrics.jsonl parses line by line. Where no mount namespace or tmpfs
// can be had (not root), the test is skipped; TestTrainSaveErrorFlag
// injects the error instead.
func TestTrainFullTmpfs(t *testing.T) {
	dir := t.TempDir()
	txt, cfg := fullDiskFiles(t, dir)
	// The same run on the ordinary disk sizes the tmpfs.
	ref := filepath.Join(dir, "ref")
	if r := cli(t, dir, "train", "--config", cfg, "--data", txt, "--out", ref); r.code != 0 {
		t.Fatalf("train on the ordinary disk: exit %d\n%s", r.code, r.stderr)
	}
	ckpt := treePages(t, filepath.Join(ref, "ckpt"))
	size := treePages(t, ref) + ckpt/2
	for _, c := range []struct {
		mode string
		want []string // in the message
		errs []int    // the steps of save_error lines
	}{
		{"stop", []string{"saving checkpoint 4 to ", "no space left on device", "KiB free on ",
			"the newest checkpoint is still step 2 (", "or use --on-save-error continue"}, nil},
		{"continue", []string{"saving checkpoint 6 to ", "no space left on device", "KiB free on ",
			"the newest checkpoint is still step 2 (", "continue with --resume once there is room\n"}, []int{4}},
	} {
		mnt, saved := t.TempDir(), filepath.Join(t.TempDir(), "run")
		out := filepath.Join(mnt, "run")
		job, _ := json.Marshal(tmpfsJob{Mount: mnt, Size: size, Run: out, Copy: saved,
			Args: []string{"train", "--config", cfg, "--data", txt, "--out", out, "--on-save-error", c.mode}})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), tmpfsEnv+"="+string(job))
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err != nil && !errors.As(err, &ee):
			t.Skipf("no mount namespace: %v", err)
		case strings.HasPrefix(stderr.String(), tmpfsSkip):
			t.Skip(strings.TrimSpace(stderr.String()))
		}
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Fatalf("--on-save-error %s on a %d-byte tmpfs: exit %d, want 1\n%s", c.mode, size, code, stderr.String())
		}
		msg := stderr.String()[strings.LastIndex(stderr.String(), "tokenmix: "):]
		t.Logf("--on-save-error %s on a %d-byte tmpfs: %s", c.mode, size, msg)
		for _, w := range append(c.want, filepath.Join(out, "ckpt", "00000002")) {
			if !strings.Contains(msg, w) {
				t.Errorf("--on-save-error %s: message without %q: %s", c.mode, w, msg)
			}
		}
		if errs := checkFullDiskRun(t, saved, 2); !slices.Equal(errs, c.errs) {
			t.Errorf("--on-save-error %s: save_error lines at steps %v, want %v", c.mode, errs, c.errs)
		}
	}
}
