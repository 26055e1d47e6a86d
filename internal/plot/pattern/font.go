package pattern

import "image"

// glyphs is a 3×5 pixel font for panel labels, one string of 15 bits per
// character, rows top to bottom ('#' set).
var glyphs = map[rune]string{
	'0': "####.##.##.####", '1': ".#.##..#..#.###", '2': "###..#####..###",
	'3': "###..#.##..####", '4': "#.##.####..#..#", '5': "####..###..####",
	'6': "####..####.####", '7': "###..#..#..#..#", '8': "####.#####.####",
	'9': "####.####..####", 'L': "#..#..#..#..###", 'H': "#.##.#####.##.#",
	'Q': ".#.#.##.###..##", ' ': "...............",
	'Z': "###..#.#.#..###", '%': "#....#.#.#....#", '.': ".............#.",
	'E': "####..####..###", 'R': "##.#.###.#.##.#", 'O': "####.##.##.####", 'S': "####..###..####",
}

// text draws s at (x, y) (top-left) in 2× scaled glyphs: 8 pixels per
// character, 10 pixels high. Unknown characters are left blank.
func text(img *image.RGBA, x, y int, s string) {
	for _, r := range s {
		g := glyphs[r]
		for k := 0; k < len(g); k++ {
			if g[k] != '#' {
				continue
			}
			px, py := x+k%3*2, y+k/3*2
			fill(img, image.Rect(px, py, px+2, py+2), Ink)
		}
		x += 8
	}
}
