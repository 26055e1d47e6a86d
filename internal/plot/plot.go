package plot

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one named line: points (X[i], Y[i]).
type Series struct {
	Name string
	X, Y []float64
}

// Point is one named scatter point.
type Point struct {
	Name string
	X, Y float64
}

// Figure holds what every chart needs besides its data.
type Figure struct {
	Title, XLabel, YLabel string
	// LogX and LogY use logarithmic axes; points ≤ 0 are then dropped.
	LogX, LogY bool
	// LegendLeft puts the legend top left instead of top right (for curves
	// that rise to the right).
	LegendLeft bool
	// Width and Height in centimetres (16 × 10 when 0).
	Width, Height float64
	// HLines are labelled horizontal reference lines (e.g. a compressor's
	// bits per byte), drawn dashed across the data's x range.
	HLines []HLine
}

// HLine is a labelled horizontal reference line at Y.
type HLine struct {
	Name string
	Y    float64
}

// palette is Tableau 10, which stays distinguishable for ~10 lines.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0xd6, 0x27, 0x28, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
	{0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff}, {0xbc, 0xbd, 0x22, 0xff},
	{0x17, 0xbe, 0xcf, 0xff},
}

// Color returns the i-th colour of the palette (cycling).
func Color(i int) color.Color { return palette[i%len(palette)] }

func (f Figure) new() *gplot.Plot {
	p := gplot.New()
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	p.Y.Label.Text = f.YLabel
	if f.LogX {
		p.X.Scale = gplot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	if f.LogY {
		p.Y.Scale = gplot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	}
	p.Add(plotter.NewGrid())
	return p
}

func (f Figure) ok(x, y float64) bool {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) {
		return false
	}
	return (!f.LogX || x > 0) && (!f.LogY || y > 0)
}

func (f Figure) save(p *gplot.Plot, path string) error {
	w, h := f.Width, f.Height
	if w == 0 {
		w = 16
	}
	if h == 0 {
		h = 10
	}
	if err := p.Save(vg.Length(w)*vg.Centimeter, vg.Length(h)*vg.Centimeter, path); err != nil {
		return fmt.Errorf("plot: %v", err)
	}
	return nil
}

// Lines draws one line per series, with markers when a series has few
// points, a legend and f.HLines, and saves the figure as a PNG at path. Series with
// no drawable point are left out of the figure; it returns an error if no
// series has any.
func Lines(path string, f Figure, series []Series) error {
	p := f.new()
	n := 0
	var all plotter.XYs
	for i, s := range series {
		var xy plotter.XYs
		for j := range min(len(s.X), len(s.Y)) {
			if f.ok(s.X[j], s.Y[j]) {
				xy = append(xy, plotter.XY{X: s.X[j], Y: s.Y[j]})
			}
		}
		if len(xy) == 0 {
			continue
		}
		all = append(all, xy...)
		l, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("plot: %s: %v", s.Name, err)
		}
		l.Color = Color(i)
		l.Width = vg.Points(1.5)
		l.Dashes = dashes(i)
		p.Add(l)
		if len(xy) <= 30 {
			sc, _ := plotter.NewScatter(xy)
			sc.Color = Color(i)
			sc.Shape = draw.CircleGlyph{}
			sc.Radius = vg.Points(2)
			p.Add(sc)
			p.Legend.Add(s.Name, l, sc)
		} else {
			p.Legend.Add(s.Name, l)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("plot: %s: no data to draw", path)
	}
	if err := f.addHLines(p, all); err != nil {
		return err
	}
	p.Legend.Top = true
	p.Legend.Left = f.LegendLeft
	return f.save(p, path)
}

// dashes varies the line style after the palette's ten colours are used.
func dashes(i int) []vg.Length {
	if i < len(palette) {
		return nil
	}
	return []vg.Length{vg.Points(4), vg.Points(2)}
}

// Scatter draws one labelled, coloured point per entry and saves the figure
// as a PNG at path. It returns an error if no point is drawable.
func Scatter(path string, f Figure, points []Point) error {
	p := f.new()
	var xy plotter.XYs
	var names []string
	for i, q := range points {
		if !f.ok(q.X, q.Y) {
			continue
		}
		sc, err := plotter.NewScatter(plotter.XYs{{X: q.X, Y: q.Y}})
		if err != nil {
			return fmt.Errorf("plot: %v", err)
		}
		sc.Color = Color(i)
		sc.Shape = draw.CircleGlyph{}
		sc.Radius = vg.Points(4)
		p.Add(sc)
		xy = append(xy, plotter.XY{X: q.X, Y: q.Y})
		names = append(names, q.Name)
	}
	if len(xy) == 0 {
		return fmt.Errorf("plot: %s: no data to draw", path)
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: names})
	if err != nil {
		return fmt.Errorf("plot: %v", err)
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size = vg.Points(8)
		lb.TextStyle[i].XAlign = draw.XLeft
	}
	lb.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(-3)}
	p.Add(lb)
	if err := f.addHLines(p, xy); err != nil {
		return err
	}
	// Leave room for the labels right of the rightmost point.
	padRange(&p.X, f.LogX, 0.25)
	padRange(&p.Y, f.LogY, 0.08)
	return f.save(p, path)
}

// addHLines draws f.HLines from the smallest to the largest x of xy.
func (f Figure) addHLines(p *gplot.Plot, xy plotter.XYs) error {
	if len(f.HLines) == 0 {
		return nil
	}
	lo, hi := xy[0].X, xy[0].X
	for _, q := range xy {
		lo, hi = math.Min(lo, q.X), math.Max(hi, q.X)
	}
	if lo == hi {
		lo, hi = lo*0.9, hi*1.1
	}
	var lxy plotter.XYs
	var names []string
	for _, h := range f.HLines {
		if !f.ok(lo, h.Y) {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: h.Y}, {X: hi, Y: h.Y}})
		if err != nil {
			return fmt.Errorf("plot: %v", err)
		}
		l.Color = color.Gray{Y: 0x60}
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(l)
		lxy = append(lxy, plotter.XY{X: lo, Y: h.Y})
		names = append(names, h.Name)
	}
	if len(lxy) == 0 {
		return nil
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: lxy, Labels: names})
	if err != nil {
		return fmt.Errorf("plot: %v", err)
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size = vg.Points(8)
		lb.TextStyle[i].Color = color.Gray{Y: 0x40}
	}
	lb.Offset = vg.Point{X: vg.Points(2), Y: vg.Points(2)}
	p.Add(lb)
	return nil
}

// padRange widens an axis after its range is known from the data.
func padRange(a *gplot.Axis, log bool, frac float64) {
	lo, hi := a.Min, a.Max
	if log {
		if lo <= 0 || hi <= 0 {
			return
		}
		l, h := math.Log10(lo), math.Log10(hi)
		d := math.Max(h-l, 0.2)
		a.Min, a.Max = math.Pow(10, l-0.05*d), math.Pow(10, h+frac*d)
		return
	}
	d := hi - lo
	if d == 0 {
		d = math.Max(math.Abs(hi), 1)
	}
	a.Min, a.Max = lo-0.05*d, hi+frac*d
}

// logTicks labels powers of two when the range spans less than three
// decades (sequence lengths), else powers of ten, with minor ticks between.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []gplot.Tick {
	if lo <= 0 || hi <= 0 {
		return nil
	}
	if hi/lo < 1000 {
		var ts []gplot.Tick
		for e := math.Floor(math.Log2(lo)); math.Pow(2, e) <= hi*1.0001; e++ {
			v := math.Pow(2, e)
			if v >= lo*0.9999 {
				ts = append(ts, gplot.Tick{Value: v, Label: fmtTick(v)})
			}
		}
		if len(ts) >= 2 {
			return ts
		}
	}
	if hi/lo < 10 {
		// Within one decade the powers of ten label nothing: label
		// multiples of a 1-2-5 step instead, at most six of them.
		return linearTicks(lo, hi)
	}
	return gplot.LogTicks{Prec: -1}.Ticks(lo, hi)
}

// linearTicks labels the multiples of the smallest 1-2-5 step that gives
// at most six ticks in [lo, hi].
func linearTicks(lo, hi float64) []gplot.Tick {
	step := math.Pow(10, math.Floor(math.Log10(hi-lo))-1)
	for i := 0; math.Floor(hi/step)-math.Ceil(lo/step) >= 6; i++ {
		step *= [3]float64{2, 2.5, 2}[i%3] // 1, 2, 5, 10, 20, 50, …
	}
	var ts []gplot.Tick
	for k := math.Ceil(lo / step); k*step <= hi; k++ {
		v := k * step
		ts = append(ts, gplot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)})
	}
	return ts
}

func fmtTick(v float64) string {
	switch {
	case v >= 1<<20 && math.Mod(v, 1<<20) == 0:
		return strconv.Itoa(int(v/(1<<20))) + "M"
	case v >= 1<<10 && math.Mod(v, 1<<10) == 0:
		return strconv.Itoa(int(v/(1<<10))) + "K"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
