package train

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/internal/run"
)

// SaveError is the error of a checkpoint that could not be written. The
// save removed what it wrote, so the run directory's newest checkpoint is
// the one before (Kept).
type SaveError struct {
	Step int    // the checkpoint's step
	Path string // the checkpoint's directory
	// Dir is the run directory, and Free the bytes free on its
	// filesystem after the failure (−1 when unknown).
	Dir  string
	Free int64
	// Kept is the step of the newest checkpoint, −1 when there is none,
	// and KeptPath its directory.
	Kept     int
	KeptPath string
	// Last says it was the run's last checkpoint (at the end, or of an
	// interrupted run), which Options.ContinueOnSaveError does not pass
	// over.
	Last bool
	Err  error
}

func (e *SaveError) Error() string {
	free := "free space unknown"
	switch {
	case e.Free == 0:
		free = "no space free on " + e.Dir
	case e.Free > 0:
		free = memstat.FormatBytes(e.Free) + " free on " + e.Dir
	}
	kept := "there is no checkpoint yet"
	switch {
	case e.Kept >= e.Step:
		kept = fmt.Sprintf("the newest checkpoint is step %d (%s)", e.Kept, e.KeptPath)
	case e.Kept >= 0:
		kept = fmt.Sprintf("the newest checkpoint is still step %d (%s)", e.Kept, e.KeptPath)
	}
	return fmt.Sprintf("saving checkpoint %d to %s: %v (%s); %s", e.Step, e.Path, e.Err, free, kept)
}

func (e *SaveError) Unwrap() error { return e.Err }

// saveError is the SaveError of err, the failure of the save of the
// checkpoint at step into d, the run's last one when last is set.
func saveError(d *run.Dir, step int, last bool, err error) *SaveError {
	e := &SaveError{Step: step, Path: d.CkptPath(step), Dir: d.Path, Free: -1, Kept: -1, Last: last, Err: err}
	if n, ferr := run.FreeSpace(d.Path); ferr == nil {
		e.Free = n
	}
	if k, lerr := d.Latest(); lerr == nil && k >= 0 {
		e.Kept, e.KeptPath = k, d.CkptPath(k)
	}
	return e
}
