package main

import (
	"fmt"
	"time"
)

// profRun is a CPU profile and allocation count around one measurement
// of a target that serves pprof; a nil *profRun does nothing.
type profRun struct {
	p      *pprofClient
	name   string
	before memStats
	done   <-chan error
}

// profileName names a measurement's profile files: SCENARIO-rROUND for
// snigate (sni/pgo.sh merges those), SCENARIO-rROUND-TARGET for any other
// target with a pprof endpoint (snigate-x25519), so that targets profiled
// in the same run do not overwrite each other's files.
func profileName(res Result) string {
	name := fmt.Sprintf("%s-r%d", res.Scenario, res.Round)
	if res.Target != "snigate" {
		name += "-" + res.Target
	}
	return name
}

func (r *runner) pprof(t target) *pprofClient { return newPprofClient(t.Pprof, r.pprofDir) }

func (r *runner) startProfile(t target, res Result, d time.Duration) *profRun {
	p := r.pprof(t)
	if p == nil {
		return nil
	}
	name := profileName(res)
	before, _ := p.memStats()
	p.save("/debug/pprof/allocs", name+".allocs-before.pprof")
	secs := max(1, int(d.Seconds())-1)
	return &profRun{p: p, name: name, before: before, done: p.cpuProfile(secs, name+".cpu.pprof")}
}

// finish waits for the CPU profile and records allocations per operation.
func (pr *profRun) finish(res *Result, ops int) {
	if pr == nil {
		return
	}
	if err := <-pr.done; err != nil {
		res.Notes["pprof_error"] = err.Error()
	}
	after, err := pr.p.memStats()
	if err != nil || ops == 0 {
		return
	}
	res.Values["allocs_conn"] = float64(after.Mallocs-pr.before.Mallocs) / float64(ops)
	res.Values["alloc_kib_conn"] = float64(after.TotalAlloc-pr.before.TotalAlloc) / 1024 / float64(ops)
	res.Values["gc_cycles"] = float64(after.NumGC - pr.before.NumGC)
	pr.p.save("/debug/pprof/allocs", pr.name+".allocs.pprof")
}

// goSample is a Go process's goroutines and memory at one moment.
type goSample struct {
	ok         bool
	goroutines int
	ms         memStats
}

func (p *pprofClient) snapshot() goSample {
	if p == nil {
		return goSample{}
	}
	g, err := p.goroutines()
	if err != nil {
		return goSample{}
	}
	ms, err := p.memStats()
	return goSample{ok: err == nil, goroutines: g, ms: ms}
}

// saveIdle saves the heap and goroutine profiles with the tunnels open.
func (p *pprofClient) saveIdle(res Result) {
	if p == nil {
		return
	}
	name := profileName(res)
	p.save("/debug/pprof/heap", name+".heap.pprof")
	p.save("/debug/pprof/goroutine?debug=1", name+".goroutines.txt")
}

// perConn records the Go runtime's view of the cost of n open tunnels.
func (a goSample) perConn(b goSample, n int, vals map[string]float64) {
	if !a.ok || !b.ok || n == 0 {
		return
	}
	per := func(x, y uint64) float64 { return (float64(x) - float64(y)) / 1024 / float64(n) }
	vals["goroutines_conn"] = float64(a.goroutines-b.goroutines) / float64(n)
	vals["heap_kib_conn"] = per(a.ms.HeapInuse, b.ms.HeapInuse)
	vals["stack_kib_conn"] = per(a.ms.StackInuse, b.ms.StackInuse)
	vals["sys_kib_conn"] = per(a.ms.Sys, b.ms.Sys)
}
