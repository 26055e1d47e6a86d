package train

import (
	"math"
	"time"

	"github.com/tokenmix/tokenmix/internal/bench/stat"
)

// calibSteps are timed to turn a duration budget into a step count; their
// median sets the first pace, so a burst of load from another process during
// a few of them does not set the plan.
const calibSteps = 9

// paceEMA is the weight of the newest step in the running pace after
// calibration: about the last 50 steps count.
const paceEMA = 1.0 / 50

// Unplanned marks a duration-budget run whose step count is not known yet.
const Unplanned = 1 << 30

// pacer turns a duration budget into a step count, and keeps turning it as
// the pace changes. The learning-rate schedule is a function of the step
// and the planned total, so a total fixed once from the first steps ends
// the run early when a neighbouring job slows it down (cutting the cosine
// decay short), or leaves time unused when the neighbour finishes. Instead
// the plan is redone after every step from a running pace: the remaining
// time buys the remaining steps. The plan's error shrinks with the time
// left, so the run ends near the planned step, at the schedule's low LR.
type pacer struct {
	budget time.Duration
	calib  []float64 // seconds of the calibration steps
	seen   int       // steps observed, including the first, untimed one
	per    float64   // running seconds per step; 0 while calibrating
}

// plan records that a step took dt (step steps done, used of the budget
// spent) and returns the planned total, or 0 while still calibrating. The
// first observed step, which allocates, is left out of the pace.
func (p *pacer) plan(step int, dt, used time.Duration) int {
	p.seen++
	switch {
	case p.seen == 1:
		return 0
	case p.per == 0:
		p.calib = append(p.calib, dt.Seconds())
		if len(p.calib) < calibSteps {
			return 0
		}
		p.per = stat.Median(p.calib)
	default:
		p.per += paceEMA * (dt.Seconds() - p.per)
	}
	left := (p.budget - used).Seconds()
	return step + max(0, int(math.Round(left/p.per)))
}
