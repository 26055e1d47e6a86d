package pattern

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
)

// Colours of the pictures: allowed (or weight 1) cells are Dark, others
// Light; in the 2-D view the query is Query and positions past T are Paper.
var (
	Dark  = color.RGBA{0x08, 0x30, 0x6b, 0xff}
	Light = color.RGBA{0xee, 0xee, 0xee, 0xff}
	Query = color.RGBA{0xd6, 0x27, 0x28, 0xff}
	Paper = color.RGBA{0xff, 0xff, 0xff, 0xff}
	Frame = color.RGBA{0x99, 0x99, 0x99, 0xff}
	// Zero is the colour of an exact-zero weight in a heat map, Tint that
	// of the smallest positive weight (so sparsity is visible: no positive
	// weight is drawn Zero).
	Zero   = color.RGBA{0xff, 0xff, 0xff, 0xff}
	Tint   = color.RGBA{0xc6, 0xdb, 0xef, 0xff}
	Ink    = color.RGBA{0x22, 0x22, 0x22, 0xff}
	margin = 12 // outer margin and gap between panels, pixels
	labelH = 16 // label strip above a panel, pixels
)

// Geometry says where Draw put the panels: matrix panel (l, h) has its
// top-left cell at (X0 + h·Step, Y0 + l·RowStep) and cells of Cell pixels
// (Cell = 1 and Down > 1 when T is large: a pixel then averages Down×Down
// cells). Grid panels (when drawn) sit GridDY below their matrix panels with
// cells of GridCell pixels.
type Geometry struct {
	X0, Y0, Step, RowStep int
	Cell, Down            int
	Side                  int // matrix panel side in pixels
	GridDY, GridCell      int
}

// Layout returns the geometry Draw uses for nLayers×nHeads panels at length
// T, with a 2-D view of side grid (0 for none).
func Layout(nLayers, nHeads, T, grid int) Geometry {
	g := Geometry{Cell: 1, Down: 1}
	switch {
	case T <= 256:
		g.Cell = max(1, 256/T)
		g.Side = T * g.Cell
	default:
		g.Down = (T + 255) / 256
		g.Side = (T + g.Down - 1) / g.Down
	}
	g.X0, g.Y0 = margin, margin+labelH
	g.Step = g.Side + margin
	g.RowStep = g.Side + margin + labelH
	if grid > 0 {
		g.GridCell = max(1, g.Side/grid)
		g.GridDY = g.RowStep
		g.RowStep += grid*g.GridCell + margin + labelH
	}
	return g
}

// Draw writes a PNG of maps ([layer][head]): each head's and each layer's
// T×T matrix, query rows top to bottom and key columns left to right, with
// value 1 darkest, labelled "L<layer> H<head>" (the layout of Figure 3 of
// Child et al. 2019). Heat maps are coloured by HeatColour (exact zeros
// white) and their labels add "ZEROS <percent>%", the fraction of exact
// zeros. When grid > 0 it also draws, below each matrix, the
// 2-D view of query q on a grid×grid image (position p at row p/grid,
// column p%grid): the query in red, the keys it attends to dark. Draw
// returns an error if maps is empty or ragged, or q is not in [0,T) when
// grid > 0.
func Draw(w io.Writer, maps [][]Map, grid, q int) error {
	img, err := Render(maps, grid, q)
	if err != nil {
		return err
	}
	return png.Encode(w, img)
}

// Render is Draw without the encoding.
func Render(maps [][]Map, grid, q int) (*image.RGBA, error) {
	if len(maps) == 0 || len(maps[0]) == 0 {
		return nil, fmt.Errorf("pattern: nothing to draw")
	}
	T, nh := maps[0][0].T, len(maps[0])
	for _, row := range maps {
		if len(row) != nh {
			return nil, fmt.Errorf("pattern: layers have different head counts")
		}
		for _, m := range row {
			if m.T != T || len(m.V) != T*T {
				return nil, fmt.Errorf("pattern: map L%d H%d is not %d×%d", m.Layer, m.Head, T, T)
			}
		}
	}
	if grid > 0 && (q < 0 || q >= T) {
		return nil, fmt.Errorf("pattern: query %d outside [0,%d)", q, T)
	}
	if grid > 0 && grid*grid < T {
		return nil, fmt.Errorf("pattern: a %d×%d grid holds fewer than T=%d positions", grid, grid, T)
	}
	g := Layout(len(maps), nh, T, grid)
	wpx := g.X0 + nh*g.Step
	hpx := g.Y0 + len(maps)*g.RowStep - labelH
	img := image.NewRGBA(image.Rect(0, 0, wpx, hpx))
	fill(img, img.Bounds(), Paper)
	for l, row := range maps {
		for h, m := range row {
			x0, y0 := g.X0+h*g.Step, g.Y0+l*g.RowStep
			colour := shade
			label := fmt.Sprintf("L%d H%d", m.Layer, m.Head)
			if m.Heat {
				colour = HeatColour
				label += fmt.Sprintf(" ZEROS %.1f%%", 100*m.Zeros)
			}
			text(img, x0, y0-labelH+3, label)
			frame(img, image.Rect(x0, y0, x0+g.Side, y0+g.Side))
			for py := 0; py < g.Side; py++ {
				for px := 0; px < g.Side; px++ {
					img.SetRGBA(x0+px, y0+py, colour(cellMean(m, py/g.Cell*g.Down, px/g.Cell*g.Down, g.Down)))
				}
			}
			if grid == 0 {
				continue
			}
			gy := y0 + g.GridDY
			c := g.GridCell
			text(img, x0, gy-labelH+3, fmt.Sprintf("L%d H%d Q%d", m.Layer, m.Head, q))
			frame(img, image.Rect(x0, gy, x0+grid*c, gy+grid*c))
			for p := 0; p < grid*grid; p++ {
				col := Paper
				switch {
				case p == q:
					col = Query
				case p < T:
					col = colour(m.V[q*T+p])
				}
				r := image.Rect(x0+p%grid*c, gy+p/grid*c, x0+(p%grid+1)*c, gy+(p/grid+1)*c)
				fill(img, r, col)
			}
		}
	}
	return img, nil
}

// cellMean averages the down×down cells of m from (i0, j0), clipped to T.
func cellMean(m Map, i0, j0, down int) float64 {
	var s float64
	n := 0
	for i := i0; i < min(i0+down, m.T); i++ {
		for j := j0; j < min(j0+down, m.T); j++ {
			s += m.V[i*m.T+j]
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// shade maps v ∈ [0,1] linearly from Light to Dark.
func shade(v float64) color.RGBA {
	v = min(1, max(0, v))
	mix := func(a, b uint8) uint8 { return uint8(float64(a) + (float64(b)-float64(a))*v + 0.5) }
	return color.RGBA{mix(Light.R, Dark.R), mix(Light.G, Dark.G), mix(Light.B, Dark.B), 0xff}
}

// HeatColour maps a weight v ∈ [0,1] to a heat-map colour: Zero for v = 0
// exactly (v ≤ 0), otherwise from Tint towards Dark along √v, so that the
// small weights of a dense row stay visible.
func HeatColour(v float64) color.RGBA {
	if v <= 0 {
		return Zero
	}
	v = math.Sqrt(min(1, v))
	mix := func(a, b uint8) uint8 { return uint8(float64(a) + (float64(b)-float64(a))*v + 0.5) }
	return color.RGBA{mix(Tint.R, Dark.R), mix(Tint.G, Dark.G), mix(Tint.B, Dark.B), 0xff}
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

// frame draws a one-pixel rectangle just outside r.
func frame(img *image.RGBA, r image.Rectangle) {
	for x := r.Min.X - 1; x <= r.Max.X; x++ {
		img.SetRGBA(x, r.Min.Y-1, Frame)
		img.SetRGBA(x, r.Max.Y, Frame)
	}
	for y := r.Min.Y - 1; y <= r.Max.Y; y++ {
		img.SetRGBA(r.Min.X-1, y, Frame)
		img.SetRGBA(r.Max.X, y, Frame)
	}
}
