package snigate

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(removeBuildDir))
}

func removeBuildDir(int) {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// recordingLog is a logger that keeps its lines for tests to read.
type recordingLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *recordingLog) add(level, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level+" "+fmt.Sprintf(format, v...))
}

func (l *recordingLog) Infof(format string, v ...any)    { l.add("INFO", format, v...) }
func (l *recordingLog) Warningf(format string, v ...any) { l.add("WARNING", format, v...) }
func (l *recordingLog) Errorf(format string, v ...any)   { l.add("ERROR", format, v...) }

// count returns how many lines contain s.
func (l *recordingLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

func (l *recordingLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
