package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// report is the markdown results file of one run.
type report struct {
	sum     *summary
	cmp     comparison
	threads map[string]int
	cores   int
	header  string // machine, versions, settings (written by run.sh)
	dns     string // bench/dns/run.sh output
}

// write prints the results table to stdout and, when path is set, writes
// the whole report there.
func (r report) write(path string) error {
	var table bytes.Buffer
	r.writeResults(&table)
	os.Stdout.Write(table.Bytes())
	if path == "" {
		return nil
	}
	var b bytes.Buffer
	b.WriteString(r.header)
	b.Write(table.Bytes())
	r.writeDetails(&b)
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func (r report) writeResults(w io.Writer) {
	rounds := 0
	for _, n := range r.sum.rounds {
		rounds = max(rounds, n)
	}
	fmt.Fprintf(w, "\n## Results\n\nMedians over %d rounds; (N×) is the ratio to %s; the last columns compare %s with the best of %v for each metric (idle memory: with %s).\n\n",
		rounds, r.cmp.base, strings.Join(r.cmp.present(r.sum), " and "), r.cmp.refs, r.cmp.base)
	var goals bytes.Buffer
	writeGoals(&goals, r.sum, r.cmp, r.cmp.goals)
	if goals.Len() > 0 {
		fmt.Fprintf(w, "### Issue 21's targets\n\n%s\n", goals.String())
		if r.sum.idleReadings > 0 {
			fmt.Fprintf(w, "The idle figure is the worst of the %d readings' medians (fills of %s tunnels; each count and delay a median over the rounds first); \"at\" says which reading it was.\n\n",
				r.sum.idleReadings, strings.Join(r.sum.idleCounts(), ", "))
		}
		fmt.Fprint(w, "### Every metric\n\n")
	}
	writeTable(w, r.sum, r.cmp)
	if row, ok := dnsRow(r.dns); ok {
		fmt.Fprintf(w, "\n| metric | snigate | dnsmasq | snigate / dnsmasq | target met |\n|---|--:|--:|--:|---|\n%s\n", row)
	}
}

func (r report) writeDetails(w io.Writer) {
	fmt.Fprintf(w, "\n## CPU during each measurement (median, %% of one core; %d cores)\n\n", r.cores)
	writeCPU(w, r.sum, r.threads, r.cores)
	fmt.Fprintln(w, "\n## Secondary figures (medians)")
	fmt.Fprintln(w)
	writeExtra(w, r.sum)
	fmt.Fprintln(w, "\n## Notes per measurement")
	fmt.Fprintln(w)
	writeNotes(w, r.sum)
	if r.dns != "" {
		fmt.Fprintf(w, "\n## DNS (bench/dns/run.sh)\n\n```\n%s```\n", r.dns)
	}
}
