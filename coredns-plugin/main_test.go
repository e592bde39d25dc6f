package snigate

import (
	"fmt"
	"os"
	"testing"

	"github.com/snigate/snigate/internal/testkit"
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

// recordingLog is the plugin's printf-style logger writing "LEVEL text"
// lines to a test kit log sink, for tests to read.
type recordingLog struct{ testkit.LogSink }

func (l *recordingLog) add(level, format string, v ...any) {
	fmt.Fprintf(&l.LogSink, "%s %s\n", level, fmt.Sprintf(format, v...))
}

func (l *recordingLog) Infof(format string, v ...any)    { l.add("INFO", format, v...) }
func (l *recordingLog) Warningf(format string, v ...any) { l.add("WARNING", format, v...) }
func (l *recordingLog) Errorf(format string, v ...any)   { l.add("ERROR", format, v...) }

// count returns how many lines contain s.
func (l *recordingLog) count(s string) int { return len(l.Lines(s)) }
