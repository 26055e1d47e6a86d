package train

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress reports a run's training steps.
type Progress interface {
	// Start begins a run of total steps, of which done are already done.
	Start(name string, total, done int)
	// SetTotal changes the planned number of steps.
	SetTotal(total int)
	// Update reports that step steps are done, the last loss and the
	// training throughput.
	Update(step int, loss, tokensPerSec float64)
	// Note prints a line of its own (an evaluation result, say).
	Note(line string)
	// Finish ends the run's display.
	Finish()
}

// NewProgress returns a live progress bar on w when w is a terminal, and
// otherwise a plain reporter that prints one line at every tenth of the run,
// so logs stay clean. A nil w reports nothing. ProgressLinesEnv=1 in the
// environment forces the plain reporter (the arena sets it for workers that
// run side by side, whose bars would overwrite each other).
func NewProgress(w io.Writer) Progress {
	if w == nil {
		return quiet{}
	}
	if f, ok := w.(*os.File); ok && os.Getenv(ProgressLinesEnv) != "1" && term.IsTerminal(int(f.Fd())) {
		return &barProgress{w: w}
	}
	return &lineProgress{w: w}
}

// ProgressLinesEnv names the environment variable that forces line
// progress.
const ProgressLinesEnv = "TOKENMIX_PROGRESS_LINES"

type quiet struct{}

func (quiet) Start(string, int, int)       {}
func (quiet) SetTotal(int)                 {}
func (quiet) Update(int, float64, float64) {}
func (quiet) Note(string)                  {}
func (quiet) Finish()                      {}

// barProgress draws a progressbar/v3 bar: step/total, ETA, loss and tokens/s.
type barProgress struct {
	w    io.Writer
	name string
	bar  *progressbar.ProgressBar
}

func (p *barProgress) Start(name string, total, done int) {
	p.name = name
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(fmt.Sprintf("%-10s", name)),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetWidth(24),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	if done > 0 {
		p.bar.Set(done)
	}
}

func (p *barProgress) SetTotal(total int) {
	if p.bar != nil {
		p.bar.ChangeMax(total)
	}
}

func (p *barProgress) Update(step int, loss, tps float64) {
	if p.bar == nil {
		return
	}
	p.bar.Describe(fmt.Sprintf("%-10s loss %.4f %6.0f tok/s", p.name, loss, tps))
	p.bar.Set(step)
}

func (p *barProgress) Note(line string) {
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintln(p.w, line)
}

func (p *barProgress) Finish() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

// lineProgress prints "name step k/n loss … tok/s … eta …" at every tenth
// of the (possibly replanned) total.
type lineProgress struct {
	w                 io.Writer
	name              string
	total, last, next int
	start             time.Time
	startStep         int
}

func (p *lineProgress) Start(name string, total, done int) {
	p.name, p.start, p.startStep, p.last = name, time.Now(), done, done
	p.SetTotal(total)
}

// SetTotal moves the next line to the first tenth of the new total past the
// last line printed.
func (p *lineProgress) SetTotal(total int) {
	p.total = total
	tenth := max(total/10, 1)
	p.next = (p.last/tenth + 1) * tenth
}

func (p *lineProgress) Update(step int, loss, tps float64) {
	if step < p.next && step != p.total {
		return
	}
	p.last = step
	p.SetTotal(p.total)
	eta := "?"
	if done := step - p.startStep; done > 0 {
		left := time.Duration(float64(time.Since(p.start)) / float64(done) * float64(p.total-step))
		eta = left.Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "%s step %d/%d loss %.4f %.0f tok/s eta %s\n", p.name, step, p.total, loss, tps, eta)
}

func (p *lineProgress) Note(line string) { fmt.Fprintln(p.w, line) }

func (p *lineProgress) Finish() {}
