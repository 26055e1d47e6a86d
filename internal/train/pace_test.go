package train

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestPacerFollowsPace simulates runs whose step time changes part-way
// through (a neighbouring job starts or ends). A plan fixed after
// calibration would stop early (slowdown) or leave time unused (speedup);
// the replanned run must end at its planned step, with the budget spent.
func TestPacerFollowsPace(t *testing.T) {
	const ms = time.Millisecond
	cases := []struct {
		name          string
		before, after time.Duration
		switchAt      int // step at which the pace changes
	}{
		{"steady", 10 * ms, 10 * ms, 0},
		{"slowdown", 10 * ms, 17 * ms, 400},
		{"speedup", 20 * ms, 9 * ms, 100},
		{"late slowdown", 10 * ms, 25 * ms, 900},
		{"burst in calibration", 10 * ms, 10 * ms, 0},
	}
	for _, c := range cases {
		budget := 10 * time.Second
		p := pacer{budget: budget}
		planned, step := Unplanned, 0
		var used time.Duration
		var firstPlan int
		for step < planned && used < budget {
			dt := c.before
			if step >= c.switchAt {
				dt = c.after
			}
			if step == 0 {
				dt = 300 * ms // the allocating first step
			}
			if c.name == "burst in calibration" && (step == 3 || step == 5) {
				dt = 200 * ms
			}
			used += dt
			step++
			if n := p.plan(step, dt, used); n > 0 {
				if firstPlan == 0 {
					firstPlan = n
				}
				planned = n
			}
		}
		if step != planned {
			t.Errorf("%s: stopped at step %d of %d planned", c.name, step, planned)
		}
		// The budget is spent to within two steps, either way.
		if slack := budget - used; slack > 2*c.after || -slack > 2*c.after {
			t.Errorf("%s: %v of the %v budget used at step %d", c.name, used, budget, step)
		}
		if c.name == "steady" || c.name == "burst in calibration" {
			// The first plan already fits the whole budget: the median
			// ignores the two slow calibration steps (2×190 ms lost).
			spent := 300 * ms
			if c.name != "steady" {
				spent += 2 * 190 * ms
			}
			if want := 1 + int((budget-spent)/(10*ms)); step < want-1 || step > want+1 || firstPlan < want-1 || firstPlan > want+1 {
				t.Errorf("%s: first plan %d, %d steps; want about %d", c.name, firstPlan, step, want)
			}
		}
	}
}

// TestLineProgressReplanned: the plain reporter keeps to tenths of the
// current total when the total is set after calibration and then moves.
func TestLineProgressReplanned(t *testing.T) {
	var buf bytes.Buffer
	p := &lineProgress{w: &buf}
	p.Start("m", Unplanned, 0)
	for step := 1; step <= 1000; step++ {
		switch step {
		case 10:
			p.SetTotal(1000)
		case 500:
			p.SetTotal(990) // replanned a little lower
		}
		total := 1000
		if step >= 500 {
			total = 990
		}
		if step > total {
			break
		}
		p.Update(step, 1, 1)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) < 9 || len(lines) > 11 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	if !strings.HasPrefix(lines[0], "m step 100/1000 ") || !strings.HasPrefix(lines[len(lines)-1], "m step 990/990 ") {
		t.Errorf("first or last line wrong:\n%s", buf.String())
	}
}
