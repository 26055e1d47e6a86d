package run

import "os"

// fault, when set (SetWriteFault), decides which writes fail.
var fault func(path string, n int) (keep int, err error)

// SetWriteFault makes the package's file writes (checkpoints,
// metrics.jsonl, the run's own files) fail as a full or failing disk's
// do, for tests of other packages: before each write of n bytes to
// path, fail is called, and when it returns an error, only the first keep
// bytes are written and the write returns err as an *os.PathError. A nil
// fail restores plain writes; so does the function SetWriteFault returns.
// It must not be called while the package writes.
func SetWriteFault(fail func(path string, n int) (keep int, err error)) (restore func()) {
	old := fault
	fault = fail
	return func() { fault = old }
}

// write writes all of b to f, or fails as the fault set says.
func write(f *os.File, b []byte) error {
	if fault != nil {
		if keep, err := fault(f.Name(), len(b)); err != nil {
			f.Write(b[:min(max(keep, 0), len(b))])
			return &os.PathError{Op: "write", Path: f.Name(), Err: err}
		}
	}
	_, err := f.Write(b)
	return err
}
