package regcache

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashHelperEnv) != "" {
		crashHelper() // the child of TestKillMidFillThenRestart; never returns
	}
	goleak.VerifyTestMain(m)
}
