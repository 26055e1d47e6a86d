package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/internal/serve"
)

// soakChild is `tokenmix serve` in a child process of this binary.
type soakChild struct {
	cmd     *exec.Cmd
	addr    string
	exited  chan struct{} // closed when the child has exited
	err     error         // its exit status, once exited is closed
	scraper *http.Client  // one keep-alive connection, counted in every sample alike
}

// startSoakChild starts `tokenmix serve` on a free loopback port for the
// models (NAME=DIR), its output to log, and waits until it is ready.
func startSoakChild(ctx context.Context, models []string, log *os.File) (*soakChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	args := []string{"serve", "--addr", addr, "--max-body", strconv.Itoa(soakMaxBody)}
	for _, m := range models {
		args = append(args, "--run", m)
	}
	c := &soakChild{cmd: exec.Command(exe, args...), addr: addr, exited: make(chan struct{}),
		scraper: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}}
	c.cmd.Env = append(os.Environ(), "TOKENMIX_THREADS="+strconv.Itoa(parallel.Threads()))
	c.cmd.Stdout, c.cmd.Stderr = log, log
	dieWithParent(c.cmd)
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { c.err = c.cmd.Wait(); close(c.exited) }()
	for stop := time.Now().Add(time.Minute); ; {
		resp, err := c.scraper.Get("http://" + addr + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c, nil
			}
		}
		select {
		case <-c.exited:
			return nil, fmt.Errorf("soak: the server exited before it was ready (%v); its log: %s", c.err, log.Name())
		case <-ctx.Done():
			c.kill()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(stop) {
			c.kill()
			return nil, fmt.Errorf("soak: the server was not ready after a minute; its log: %s", log.Name())
		}
	}
}

// target asks the server which models it serves and returns the target
// of o's traffic.
func (c *soakChild) target(o SoakOptions) (*soakTarget, []soakModel, error) {
	resp, err := c.scraper.Get("http://" + c.addr + "/v1/models")
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var list struct{ Data []soakModel }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, nil, fmt.Errorf("soak: /v1/models: %v", err)
	}
	t := &soakTarget{url: "http://" + c.addr, addr: c.addr, len: o.Len, maxTokens: o.MaxTokens,
		maxBody: soakMaxBody, maxHeaders: serve.Defaults.MaxHeaderBytes,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.Clients}}}
	for i := range list.Data {
		m := &list.Data[i]
		p := map[string]**soakModel{"classify": &t.cls, "embed": &t.emb, "tag": &t.tag}[m.Task]
		if m.Task == "lm" && m.Causal {
			p = &t.lm
		}
		if p != nil && *p == nil {
			*p = m
		}
	}
	return t, list.Data, nil
}

// scrape reads the server's /metrics: a sample, and
// tokenmix_requests_total by endpoint and code.
func (c *soakChild) scrape() (soakSample, map[string]map[string]int, error) {
	s := soakSample{at: time.Now()}
	resp, err := c.scraper.Get("http://" + c.addr + "/metrics")
	if err != nil {
		return s, nil, fmt.Errorf("soak: scraping the server: %v", err)
	}
	defer resp.Body.Close()
	reqs := map[string]map[string]int{}
	found := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		sp := strings.LastIndexByte(line, ' ')
		if strings.HasPrefix(line, "#") || sp < 0 {
			continue
		}
		name, labels, _ := strings.Cut(line[:sp], "{")
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		switch name {
		case "process_resident_memory_bytes":
			s.RSS, found = int64(v), found+1
		case "go_memstats_heap_inuse_bytes":
			s.Heap, found = int64(v), found+1
		case "go_goroutines":
			s.Goroutines, found = int(v), found+1
		case "process_open_fds":
			s.FDs, found = int(v), found+1
		case "tokenmix_requests_total":
			e, code := label(labels, "endpoint"), label(labels, "code")
			if reqs[e] == nil {
				reqs[e] = map[string]int{}
			}
			reqs[e][code] += int(v)
		}
	}
	if err := sc.Err(); err != nil {
		return s, nil, fmt.Errorf("soak: scraping the server: %v", err)
	}
	if found != 4 {
		return s, nil, fmt.Errorf("soak: the server's /metrics lacks the Go or process collectors' RSS, heap, goroutines or fds")
	}
	return s, reqs, nil
}

// label is the value of a Prometheus label in `a="x",b="y"}`.
func label(labels, name string) string {
	_, v, ok := strings.Cut(labels, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, `"`)
	return v
}

// stop drains the server with SIGTERM, as an operator would, and returns
// an error unless it exits 0 within soakSettle.
func (c *soakChild) stop() error {
	c.scraper.CloseIdleConnections()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-c.exited:
		if c.err != nil {
			return fmt.Errorf("soak: the server's exit after SIGTERM: %v", c.err)
		}
		return nil
	case <-time.After(soakSettle):
		c.kill()
		return fmt.Errorf("soak: the server had not exited %v after SIGTERM", soakSettle)
	}
}

// kill ends the child if it is still running.
func (c *soakChild) kill() {
	select {
	case <-c.exited:
	default:
		c.cmd.Process.Kill()
		<-c.exited
	}
}
