package memstat

import "testing"

func TestFormatBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "–"}, {-1, "–"}, {512, "512 B"}, {1536, "1.5 KiB"}, {3 << 20, "3.0 MiB"}, {5 << 29, "2.50 GiB"}} {
		if got := FormatBytes(c.n); got != c.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
