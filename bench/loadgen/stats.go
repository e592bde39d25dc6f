package main

import (
	"slices"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100, nearest rank) of
// sorted, in milliseconds; 0 when sorted is empty.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.5) - 1
	rank = min(max(rank, 0), len(sorted)-1)
	return float64(sorted[rank]) / float64(time.Millisecond)
}

// median of vs (the mean of the two middle values for an even count);
// 0 when vs is empty.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// latencies collects per-request durations from several workers.
type latencies struct {
	all []time.Duration
}

func (l *latencies) merge(ds []time.Duration) { l.all = append(l.all, ds...) }

// summary sorts the samples and returns p50 and p99 in milliseconds.
func (l *latencies) summary() (p50, p99 float64) {
	slices.Sort(l.all)
	return percentile(l.all, 50), percentile(l.all, 99)
}
