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
	HeapLive   uint64 `json:"-"` // the heap the last GC marked live (snigate-pprof's heap_live_bytes)
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
	var v struct {
		Memstats memStats
		HeapLive uint64 `json:"heap_live_bytes"`
	}
	body, err := p.get("/debug/vars")
	if err != nil {
		return v.Memstats, err
	}
	defer body.Close()
	err = json.NewDecoder(body).Decode(&v)
	v.Memstats.HeapLive = v.HeapLive
	return v.Memstats, err
}

// liveBytes is what the process holds after garbage collections (the
// heap endpoint's gc=1 runs one; two, so that the sync.Pools' idle
// buffers, kept for one cycle, are gone too): its live heap and its
// goroutine stacks. Unlike the RSS, it leaves out the garbage of the
// GC's pacing and the pages the scavenger has not returned, so that a
// few requests in flight show above the noise. With name, the heap
// profile of the second collection is saved as name (what holds the
// live heap).
func (p *pprofClient) liveBytes(name string) (memStats, error) {
	const collect = "/debug/pprof/heap?gc=1"
	err := p.discard(collect)
	if err == nil && name != "" {
		err = p.save(collect, name)
	} else if err == nil {
		err = p.discard(collect)
	}
	if err != nil {
		return memStats{}, err
	}
	return p.memStats()
}

// discard GETs path and drops the answer.
func (p *pprofClient) discard(path string) error {
	body, err := p.get(path)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = io.Copy(io.Discard, body)
	return err
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
