package main

import (
	"bufio"
	"encoding/json"
	"os"
)

// Result is one measurement: one scenario against one target in one round.
// The run writes one JSON line per Result; the report reads them back.
type Result struct {
	Scenario string             `json:"scenario"`
	Target   string             `json:"target"`
	Round    int                `json:"round"`
	Values   map[string]float64 `json:"values"`
	CPU      CPUShare           `json:"cpu"`
	Notes    map[string]string  `json:"notes,omitempty"`
}

func appendResult(path string, r Result) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(r)
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readResults(paths []string) ([]Result, error) {
	var out []Result
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var r Result
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				f.Close()
				return nil, err
			}
			out = append(out, r)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
