package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// requireEnv makes a skipped end-to-end run a failure (set by .ci/run).
const requireEnv = "SNIGATE_REQUIRE_E2E"

// tools are the programs the world runs; `make test-deps` installs them.
var tools = []string{"ip", "docker-registry", "skopeo", "containerd", "ctr", "go", "sslscan", "openssl"}

// suite is the state shared by the tests of this package: why they cannot
// run (if so), and the one world they share, built on first use.
var suite struct {
	skipReason string
	spawner    *spawner

	once     sync.Once
	world    *world
	err      error
	reported bool // the build error's logs were shown once already
}

func TestMain(m *testing.M) {
	suite.spawner = newSpawner()
	suite.skipReason = canRun()
	if suite.skipReason != "" {
		loud(suite.skipReason)
	} else {
		removeLeftovers(os.Stderr)
	}
	code := m.Run()
	if suite.world != nil {
		if err := suite.world.teardown(code != 0); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: teardown: %v\n", err)
			code = 1
		}
	}
	suite.spawner.close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: goroutine leak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// canRun says why this machine cannot build the world ("" if it can).
func canRun() string {
	if os.Geteuid() != 0 {
		return "not root: network namespaces need root (run `sudo go test ./test/e2e/`)"
	}
	var missing []string
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("missing %s: run `make test-deps` (test/deps.sh) as root",
			strings.Join(missing, ", "))
	}
	probe := nsPrefix + fmt.Sprint(os.Getpid()) + "-probe"
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		return fmt.Sprintf("`ip netns add` fails (%v: %s): this machine cannot make network namespaces",
			err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("ip", "netns", "del", probe).CombinedOutput(); err != nil {
		return fmt.Sprintf("`ip netns del %s` fails (%v: %s)", probe, err, strings.TrimSpace(string(out)))
	}
	return ""
}

func loud(reason string) {
	bar := strings.Repeat("!", 78)
	fmt.Fprintf(os.Stderr, "%s\n!!! END-TO-END TESTS CANNOT RUN: %s\n", bar, reason)
	if os.Getenv(requireEnv) == "1" {
		fmt.Fprintf(os.Stderr, "!!! %s=1: every e2e test FAILS\n%s\n", requireEnv, bar)
		return
	}
	fmt.Fprintf(os.Stderr, "!!! every e2e test is SKIPPED (set %s=1 to fail instead)\n%s\n", requireEnv, bar)
}

// getWorld returns the shared world, building it on first use. It skips
// (or, with SNIGATE_REQUIRE_E2E=1, fails) t when this machine cannot run
// the suite, and fails t when the world could not be built.
func getWorld(t *testing.T) *world {
	t.Helper()
	if suite.skipReason != "" {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("end-to-end tests must run (%s=1) but cannot: %s", requireEnv, suite.skipReason)
		}
		t.Skipf("END-TO-END TEST SKIPPED: %s", suite.skipReason)
	}
	suite.once.Do(func() {
		suite.world = &world{}
		suite.err = suite.world.build()
	})
	if suite.err != nil {
		logs := "(logs above, with the first test that failed)"
		if !suite.reported {
			logs, suite.reported = suite.world.logTails(), true
		}
		t.Fatalf("building the e2e world: %v\n%s", suite.err, logs)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("world logs at failure:\n%s", suite.world.logTails())
		}
	})
	return suite.world
}
