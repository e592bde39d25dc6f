package deploy

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docFiles are the operator documents: ../docs (not docs/dev, which is the
// developers') and every README, YAML and JSON file of this tree.
func docFiles(t *testing.T, exts ...string) []string {
	t.Helper()
	var files []string
	for _, root := range []string{"../docs", "."} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (p == "../docs/dev" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if !d.IsDir() && slices.Contains(exts, filepath.Ext(p)) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinks: every relative link in the documents points at a file.
func TestDocsLinks(t *testing.T) {
	for _, f := range docFiles(t, ".md") {
		for _, m := range mdLink.FindAllStringSubmatch(string(readFile(t, f)), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), target)); err != nil {
				t.Errorf("%s: link %s: %v", f, m[1], err)
			}
		}
	}
}

var metricToken = regexp.MustCompile(`\bsnigate_[a-z_]+[a-z]\b`)

// TestDocsMetricNames: a series named in a document is one snigate exports.
func TestDocsMetricNames(t *testing.T) {
	for _, f := range docFiles(t, ".md", ".yaml", ".json") {
		for _, name := range metricToken.FindAllString(string(readFile(t, f)), -1) {
			if _, ok := metricLabels(name); !ok {
				t.Errorf("%s: %s is not a series snigate exports", f, name)
			}
		}
	}
}

// snigateCommands are the commands and flags of the interface document.
var snigateCommands = map[string][]string{
	"run":        {"-c", "--config", "--log-format", "--log-level", "-h", "--help"},
	"check":      {"-c", "--config", "--probe", "-h", "--help"},
	"demo":       {"--keep", "-h", "--help"},
	"ca":         {"init", "--out", "--name", "--force", "issue-node", "--ca", "--days", "-h", "--help"},                                                                                                                                        // --name, issue-node: extensions (cmd/snigate usage)
	"ctl":        {"--admin", "-o", "--output", "upstreams", "set", "routes", "config", "reload", "ready", "answers", "cache", "purge", "warm", "status", "export", "import", "--out", "--force", "--platform", "--repository", "-h", "--help"}, // -o and the verbs after set: extensions
	"version":    {"-o", "--output"},
	"help":       {},
	"completion": {},
}

var commandLine = regexp.MustCompile(`(?m)(?:^|\s|\x60|\$\(|/)snigate ((?:[a-z]+)(?: [^\n#\x60|;)]*)?)`)

// TestDocsCommands: the command lines shown in the documents use only the
// commands and flags snigate has.
func TestDocsCommands(t *testing.T) {
	for _, f := range docFiles(t, ".md", ".service", ".yaml") {
		for _, m := range commandLine.FindAllStringSubmatch(string(readFile(t, f)), -1) {
			words := strings.Fields(m[1])
			flags, ok := snigateCommands[words[0]]
			if !ok {
				continue // prose: "snigate warns", "snigate reloads"
			}
			for _, w := range words[1:] {
				if strings.HasPrefix(w, "-") && !slices.Contains(flags, strings.SplitN(w, "=", 2)[0]) {
					t.Errorf("%s: `snigate %s`: no flag %s for %s", f, m[1], w, words[0])
				}
			}
			if words[0] == "ctl" {
				checkCtl(t, f, words)
			}
		}
	}
}

func checkCtl(t *testing.T, f string, words []string) {
	t.Helper()
	i := slices.Index(words, "set")
	if i < 0 || len(words) < i+4 {
		return
	}
	if st := words[i+3]; !slices.Contains([]string{"ready", "drain", "maint", "STATE"}, st) {
		t.Errorf("%s: `snigate %s`: state %q, want ready, drain or maint", f, strings.Join(words, " "), st)
	}
}

// TestDocsTroubleshooting: the table covers the failures users meet, each
// row with symptom, cause, check and fix.
func TestDocsTroubleshooting(t *testing.T) {
	doc := readFile(t, "../docs/troubleshooting.md")
	var symptoms []string
	inTable := false // in the symptoms table (other tables, such as doctor's, have their own columns)
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("| Symptom")) {
			inTable = true
			continue
		}
		if !bytes.HasPrefix(line, []byte("| ")) {
			inTable = false
			continue
		}
		if !inTable || bytes.HasPrefix(line, []byte("| ---")) {
			continue
		}
		cells := strings.Split(strings.ReplaceAll(string(line), `\|`, ""), " | ")
		if len(cells) != 4 {
			t.Errorf("troubleshooting row with %d cells, want 4: %.80s", len(cells), line)
			continue
		}
		symptoms = append(symptoms, cells[0]+" "+cells[1])
	}
	required := []string{
		"HTTPS_PROXY", "unknown authority", "No required SSL certificate", "All upstreams down",
		"504", "blobs", "token", "AAAA", "containerd does not use the cluster DNS",
	}
	for _, r := range required {
		if !slices.ContainsFunc(symptoms, func(s string) bool { return strings.Contains(s, r) }) {
			t.Errorf("troubleshooting.md: no row about %q", r)
		}
	}
}
