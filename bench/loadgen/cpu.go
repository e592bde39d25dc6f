package main

import (
	"os"
	"runtime"
	"time"
)

// CPUShare is the CPU used during one measurement, in percent of one core
// (200 = both cores of a 2-core machine busy).
type CPUShare struct {
	Proxy    float64 `json:"proxy"`
	Loadgen  float64 `json:"loadgen"`
	Upstream float64 `json:"upstream"`
	// Other is everything else on the machine (other users' work).
	Other float64 `json:"other"`
	// Machine is the whole machine's busy share, 0-100 %.
	Machine float64 `json:"machine"`
}

// cpuMeter samples the CPU time of the proxy, the load generator, the
// upstream process and the whole machine between start and stop.
type cpuMeter struct {
	proxy, upstream    []int
	t0                 time.Time
	p0, l0, u0, b0, m0 int64
}

func startCPU(proxyPID, upstreamPID int) *cpuMeter {
	m := &cpuMeter{proxy: processTree(proxyPID), upstream: processTree(upstreamPID)}
	m.t0 = time.Now()
	m.p0, m.l0, m.u0 = cpuTicks(m.proxy), cpuTicks([]int{os.Getpid()}), cpuTicks(m.upstream)
	m.b0, m.m0 = machineTicks()
	return m
}

func (m *cpuMeter) stop() CPUShare {
	secs := time.Since(m.t0).Seconds()
	pct := func(ticks int64) float64 { return float64(ticks) / userHZ / secs * 100 }
	s := CPUShare{
		Proxy:    pct(cpuTicks(m.proxy) - m.p0),
		Loadgen:  pct(cpuTicks([]int{os.Getpid()}) - m.l0),
		Upstream: pct(cpuTicks(m.upstream) - m.u0),
	}
	b1, t1 := machineTicks()
	if t1 > m.m0 {
		s.Machine = float64(b1-m.b0) / float64(t1-m.m0) * 100
		busyCores := s.Machine / 100 * float64(runtime.NumCPU()) * 100
		s.Other = max(0, busyCores-s.Proxy-s.Loadgen-s.Upstream)
	}
	return s
}
