package serve

import (
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// oversizedClient posts a 40 MiB body with Python's urllib (which sends the
// whole body before it reads, without Expect: 100-continue) to each path
// given on the command line and prints one JSON line per path: the status
// and the answer, or the error the client got.
const oversizedClient = `
import json, sys, urllib.request, urllib.error
body = b'{"model": "spam", "input": "' + b"x" * (40 << 20) + b'"}'
for path in sys.argv[2:]:
    req = urllib.request.Request(sys.argv[1] + path, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            print(json.dumps({"path": path, "status": r.status, "body": r.read().decode()}))
    except urllib.error.HTTPError as e:
        print(json.dumps({"path": path, "status": e.code, "body": e.read().decode()}))
    except Exception as e:
        print(json.dumps({"path": path, "status": 0, "body": repr(e)}))
`

// TestOversizedBodyWithUrllib: a 40 MiB body posted by Python's urllib to
// every POST endpoint reads its 413 and JSON message (the server drains
// what the client still sends before it answers), and the server does not
// allocate the body's size. Skipped without python3, and with -short.
func TestOversizedBodyWithUrllib(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 480 MiB over loopback")
	}
	py := os.Getenv("PYTHON")
	if py == "" {
		py = "python3"
	}
	if _, err := exec.LookPath(py); err != nil {
		t.Skip("no python3")
	}
	ts := start(t, Config{}, loadModels(t))
	defer ts.stop(t)
	paths := []string{"/v1/classify", "/v1/score", "/v1/tag", "/v1/embeddings", "/v1/completions", "/v1/chat/completions"}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for round := range 2 {
		out, err := exec.Command(py, append([]string{"-c", oversizedClient, ts.url}, paths...)...).Output()
		if err != nil {
			t.Fatalf("the client: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != len(paths) {
			t.Fatalf("%d answers for %d paths:\n%s", len(lines), len(paths), out)
		}
		for _, l := range lines {
			var r struct {
				Path   string
				Status int
				Body   string
			}
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			var e apiError
			if r.Status != 413 || json.Unmarshal([]byte(r.Body), &e) != nil || !strings.Contains(e.Error.Message, "--max-body") {
				t.Errorf("round %d, %s: status %d, body %.200s", round, r.Path, r.Status, r.Body)
			}
		}
	}
	runtime.ReadMemStats(&after)
	// Each request may decode up to the 1 MiB cap (the JSON decoder's
	// buffers grow to a few times that), never the 40 MiB it was sent.
	n := uint64(2 * len(paths))
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 8<<20 {
		t.Errorf("the server allocated %.1f MiB per request of 40 MiB", float64(per)/(1<<20))
	}
}
