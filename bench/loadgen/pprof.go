package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// pprofClient reads the net/http/pprof and expvar endpoints of
// bench/snigate-pprof.
type pprofClient struct {
	addr string // host:port
	dir  string // where profiles are saved
	http *http.Client
}

func newPprofClient(addr, dir string) *pprofClient {
	if addr == "" || dir == "" {
		return nil
	}
	return &pprofClient{addr: addr, dir: dir, http: &http.Client{Timeout: 2 * time.Minute}}
}

// memStats is the part of runtime.MemStats that /debug/vars publishes and
// the bench uses.
type memStats struct {
	Mallocs    uint64
	TotalAlloc uint64
	HeapInuse  uint64
	StackInuse uint64
	Sys        uint64
	NumGC      uint32
}

func (p *pprofClient) get(path string) (io.ReadCloser, error) {
	resp, err := p.http.Get("http://" + p.addr + path)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return resp.Body, nil
}

func (p *pprofClient) memStats() (memStats, error) {
	var v struct{ Memstats memStats }
	body, err := p.get("/debug/vars")
	if err != nil {
		return v.Memstats, err
	}
	defer body.Close()
	err = json.NewDecoder(body).Decode(&v)
	return v.Memstats, err
}

// save writes the profile at path into the profile directory as name.
func (p *pprofClient) save(path, name string) error {
	body, err := p.get(path)
	if err != nil {
		return err
	}
	defer body.Close()
	f, err := os.Create(filepath.Join(p.dir, name))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// goroutines returns the process's goroutine count.
func (p *pprofClient) goroutines() (int, error) {
	body, err := p.get("/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, err
	}
	defer body.Close()
	line, _ := bufio.NewReader(body).ReadString('\n')
	_, n, ok := strings.Cut(strings.TrimSpace(line), "total ")
	if !ok {
		return 0, fmt.Errorf("goroutine profile: unexpected first line %q", line)
	}
	return strconv.Atoi(n)
}

// cpuProfile starts a CPU profile of secs seconds saved as name; the
// returned channel yields its error when it is done.
func (p *pprofClient) cpuProfile(secs int, name string) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- p.save(fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), name)
	}()
	return done
}
