package deploy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

const dockerfilePath = "container/Dockerfile"

var (
	wantEntrypoint = []string{"/snigate", "run", "-c", "/etc/snigate/snigate.yaml"}
	finalBases     = []string{"gcr.io/distroless/static-debian12:nonroot", "scratch"}
)

// stage is one FROM ... section of a Dockerfile, as BuildKit parses it.
type stage struct {
	base, name string
	line       int
	insns      []*parser.Node
}

// instruction arguments: the words after the keyword.
func args(n *parser.Node) []string {
	var out []string
	for a := n.Next; a != nil; a = a.Next {
		out = append(out, a.Value)
	}
	return out
}

func parseDockerfile(src string) ([]stage, error) {
	res, err := parser.Parse(strings.NewReader(src))
	if err != nil {
		return nil, err
	}
	if len(res.Warnings) > 0 {
		return nil, fmt.Errorf("parser warning: %s", res.Warnings[0].Short)
	}
	var stages []stage
	for _, n := range res.AST.Children {
		n.Value = strings.ToLower(n.Value)
		if n.Value == "from" {
			a := args(n)
			s := stage{base: a[0], line: n.StartLine}
			if len(a) == 3 && strings.EqualFold(a[1], "as") {
				s.name = a[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			if n.Value == "arg" {
				continue
			}
			return nil, fmt.Errorf("line %d: %s before FROM", n.StartLine, n.Value)
		}
		stages[len(stages)-1].insns = append(stages[len(stages)-1].insns, n)
	}
	if len(stages) < 2 {
		return nil, fmt.Errorf("want a multi-stage build (builder + final), got %d stage(s)", len(stages))
	}
	return stages, nil
}

// checkDockerfile returns every way src breaks the image's rules.
func checkDockerfile(src string) []error {
	stages, err := parseDockerfile(src)
	if err != nil {
		return []error{err}
	}
	build, final := stages[0], stages[len(stages)-1]
	var errs []error
	errs = append(errs, checkBuilder(build)...)
	errs = append(errs, checkFinal(final, build.name)...)
	return errs
}

func checkBuilder(s stage) []error {
	var errs []error
	if !strings.HasPrefix(s.base, "golang:1.26") {
		errs = append(errs, fmt.Errorf("builder FROM %s: want golang:1.26", s.base))
	}
	if s.name == "" {
		errs = append(errs, fmt.Errorf("builder stage has no name (FROM ... AS build)"))
	}
	var env, run strings.Builder
	var buildArgs []string
	for _, n := range s.insns {
		switch n.Value {
		case "arg":
			buildArgs = append(buildArgs, args(n)...)
		case "env":
			env.WriteString(strings.Join(args(n), " ") + "\n")
		case "run":
			run.WriteString(strings.Join(args(n), " ") + "\n")
		}
	}
	cgoOff := strings.Contains(env.String(), "CGO_ENABLED 0") || strings.Contains(run.String(), "CGO_ENABLED=0")
	if !cgoOff {
		errs = append(errs, fmt.Errorf("builder: CGO_ENABLED=0 not set (the final image has no libc)"))
	}
	for _, want := range []string{"go build", "-trimpath", `-ldflags "-s -w`, "./cmd/snigate", "setcap cap_net_bind_service=+ep",
		// `snigate version` of the image: stamped from build args (no .git in the context).
		"buildinfo.version=${VERSION}", "buildinfo.commit=${COMMIT}", "buildinfo.date=${BUILD_DATE}"} {
		if !strings.Contains(run.String(), want) {
			errs = append(errs, fmt.Errorf("builder: no RUN containing %q", want))
		}
	}
	for _, want := range []string{"VERSION", "COMMIT", "BUILD_DATE"} {
		if !slices.Contains(buildArgs, want) {
			errs = append(errs, fmt.Errorf("builder: no ARG %s (the version stamp of `snigate version`)", want))
		}
	}
	return errs
}

func checkFinal(s stage, builder string) []error {
	var errs []error
	if !slices.Contains(finalBases, s.base) {
		errs = append(errs, fmt.Errorf("final FROM %s: want one of %v", s.base, finalBases))
	}
	var user string
	var entry []string
	var exposed []string
	copied := false
	for _, n := range s.insns {
		switch n.Value {
		case "user":
			user = args(n)[0]
		case "entrypoint":
			if !n.Attributes["json"] {
				errs = append(errs, fmt.Errorf("line %d: ENTRYPOINT in shell form: want exec form so snigate is PID 1 and gets SIGTERM", n.StartLine))
			}
			entry = args(n)
		case "expose":
			exposed = append(exposed, args(n)...)
		case "copy":
			copied = copied || slices.Contains(n.Flags, "--from="+builder) && slices.Contains(args(n), "/snigate")
		case "run":
			errs = append(errs, fmt.Errorf("line %d: RUN in the final stage: it has no shell", n.StartLine))
		}
	}
	errs = append(errs, checkUser(user)...)
	if !slices.Equal(entry, wantEntrypoint) {
		errs = append(errs, fmt.Errorf("ENTRYPOINT %q: want %q", entry, wantEntrypoint))
	}
	if !copied {
		errs = append(errs, fmt.Errorf("final stage: no COPY --from=%s of /snigate", builder))
	}
	for _, p := range []string{"443/tcp", "53/udp", "53/tcp", "9090/tcp"} {
		if !slices.Contains(exposed, p) {
			errs = append(errs, fmt.Errorf("EXPOSE %v: want %s", exposed, p))
		}
	}
	return errs
}

func checkUser(user string) []error {
	uid, _, _ := strings.Cut(user, ":")
	n, err := strconv.Atoi(uid)
	switch {
	case user == "":
		return []error{fmt.Errorf("final stage: no USER (would run as root)")}
	case err != nil:
		return []error{fmt.Errorf("USER %s: want a numeric uid, so runAsNonRoot can verify it", user)}
	case n == 0:
		return []error{fmt.Errorf("USER %s: root", user)}
	}
	return nil
}

func TestDockerfile(t *testing.T) {
	good := string(readFile(t, dockerfilePath))
	if errs := checkDockerfile(good); len(errs) > 0 {
		for _, err := range errs {
			t.Errorf("%s: %v", dockerfilePath, err)
		}
		return
	}
	// The checker must catch what it is there for.
	bad := []struct{ name, from, to, want string }{
		{"root user", "USER 65532:65532", "USER root", "numeric uid"},
		{"uid 0", "USER 65532:65532", "USER 0", "root"},
		{"no user", "USER 65532:65532", "", "no USER"},
		{"shell entrypoint", `ENTRYPOINT ["/snigate", "run", "-c", "/etc/snigate/snigate.yaml"]`, "ENTRYPOINT /snigate run -c /etc/snigate/snigate.yaml", "shell form"},
		{"other command", `"run", "-c"`, `"check", "-c"`, "ENTRYPOINT"},
		{"cgo", "ENV CGO_ENABLED=0", "ENV CGO_ENABLED=1", "CGO_ENABLED=0"},
		{"full base", "FROM gcr.io/distroless/static-debian12:nonroot", "FROM debian:12", "final FROM"},
		{"no trimpath", "go build -trimpath", "go build", "-trimpath"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(good, tt.from, tt.to, 1)
			if src == good {
				t.Fatalf("mutation %q not found in %s", tt.from, dockerfilePath)
			}
			errs := checkDockerfile(src)
			if !slices.ContainsFunc(errs, func(e error) bool { return strings.Contains(e.Error(), tt.want) }) {
				t.Fatalf("errors %v: want one containing %q", errs, tt.want)
			}
		})
	}
}
