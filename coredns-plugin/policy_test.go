package snigate

import (
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"

	"github.com/snigate/snigate/internal/config"
)

// buildCase is a stanza, a question and the one answer to it.
type buildCase struct {
	name   string
	stanza string
	qname  string
	qtype  uint16
	want   string // the one answer as zone text; "" : not routed
}

// buildCases are stanzas with the config file withDNS (a dns section) or noDNS (none), or without one.
func buildCases(withDNS, noDNS string) []buildCase {
	return []buildCase{
		{"file's answer and ttl", "config " + withDNS, "route.example.test.", dns.TypeA,
			"route.example.test.\t45\tIN\tA\t192.0.2.99"},
		{"file's IPv6 answer", "config " + withDNS, "route.example.test.", dns.TypeAAAA,
			"route.example.test.\t45\tIN\tAAAA\t2001:db8::99"},
		{"file's dns.names are routed", "config " + withDNS, "a.extra.example.test.", dns.TypeA,
			"a.extra.example.test.\t45\tIN\tA\t192.0.2.99"},
		{"stanza's answer and ttl win", "answer 192.0.2.10\nttl 7\nconfig " + withDNS, "route.example.test.", dns.TypeA,
			"route.example.test.\t7\tIN\tA\t192.0.2.10"},
		{"stanza's answer, file's ttl", "answer 192.0.2.10\nconfig " + withDNS, "route.example.test.", dns.TypeA,
			"route.example.test.\t45\tIN\tA\t192.0.2.10"},
		{"no dns section: default ttl", "answer 192.0.2.10\nconfig " + noDNS, "route.example.test.", dns.TypeA,
			"route.example.test.\t30\tIN\tA\t192.0.2.10"},
		{"stanza names add to the file's", "answer 192.0.2.10\nnames more.example.test\nconfig " + noDNS, "more.example.test.", dns.TypeA,
			"more.example.test.\t30\tIN\tA\t192.0.2.10"},
		{"without config: default ttl", "answer 192.0.2.10\nnames more.example.test", "more.example.test.", dns.TypeA,
			"more.example.test.\t30\tIN\tA\t192.0.2.10"},
		{"a name in neither is not routed", "answer 192.0.2.10\nnames more.example.test\nconfig " + noDNS, "other.example.test.", dns.TypeA, ""},
		{"a name in both the stanza and the file is routed once", "answer 192.0.2.10\nnames route.example.test route.example.test\nconfig " + noDNS,
			"route.example.test.", dns.TypeA, "route.example.test.\t30\tIN\tA\t192.0.2.10"},
		{"the wildcard matches one valid label only", "answer 192.0.2.10\nnames *.w.example.test", "-x.w.example.test.", dns.TypeA, ""},
		{"the wildcard is not a name under itself", "answer 192.0.2.10\nnames *.w.example.test", "*.w.example.test.", dns.TypeA, ""},
	}
}

// TestBuild: the routed names are the union of the stanza's names, the
// file's route SNI patterns and its dns.names; the stanza's answer and ttl
// win over the file's dns.answer and dns.ttl, which fill in when absent.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	withDNS := writeFile(t, dir, "dns.yaml", snigateYAML("route.example.test")+
		"dns:\n  answer: [\"192.0.2.99\", \"2001:db8::99\"]\n  ttl: 45s\n  names: [\"*.extra.example.test\"]\n")
	noDNS := writeFile(t, dir, "nodns.yaml", snigateYAML("route.example.test"))
	tests := buildCases(withDNS, noDNS)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parse(caddy.NewTestController("dns", "snigate {\n"+tc.stanza+"\n}"))
			if err != nil {
				t.Fatal(err)
			}
			h, err := newHandler(s, nil, &recordingLog{})
			if err != nil {
				t.Fatal(err)
			}
			m := new(dns.Msg)
			m.SetQuestion(tc.qname, tc.qtype)
			reply, ok := h.policy.Load().Answer(m)
			switch {
			case tc.want == "" && ok:
				t.Fatalf("%s is routed:\n%s", tc.qname, reply)
			case tc.want == "":
				return
			case !ok:
				t.Fatalf("%s is not routed", tc.qname)
			}
			if len(reply.Answer) != 1 || reply.Answer[0].String() != tc.want {
				t.Errorf("answer:\n%s\nwant %s", reply, tc.want)
			}
		})
	}
}

// TestBuildAnswerCheck: the stanza's answer_check, else the file's
// dns.answer_check, checks the answer addresses with the file's first
// routed name; neither: no check.
func TestBuildAnswerCheck(t *testing.T) {
	dir := t.TempDir()
	withCheck := writeFile(t, dir, "check.yaml", snigateYAML("*.route.example.test")+
		"dns:\n  answer: [\"192.0.2.98\", \"192.0.2.99\"]\n  answer_check:\n    port: 8443\n")
	noCheck := writeFile(t, dir, "nocheck.yaml", snigateYAML("route.example.test"))
	tests := []struct {
		name      string
		stanza    string
		wantCheck bool
	}{
		{name: "the file's dns.answer_check", stanza: "config " + withCheck, wantCheck: true},
		{name: "the stanza's answer_check", stanza: "answer 192.0.2.10\nconfig " + noCheck + "\nanswer_check port 443", wantCheck: true},
		{name: "the stanza's, without a file", stanza: "answer 192.0.2.10\nnames a.example.test\nanswer_check", wantCheck: true},
		{name: "neither", stanza: "answer 192.0.2.10\nconfig " + noCheck},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parse(caddy.NewTestController("dns", "snigate {\n"+tc.stanza+"\n}"))
			if err != nil {
				t.Fatal(err)
			}
			h, err := newHandler(s, nil, &recordingLog{})
			if err != nil {
				t.Fatal(err)
			}
			if (h.check != nil) != tc.wantCheck {
				t.Fatalf("check %v, want one: %v", h.check, tc.wantCheck)
			}
			if h.check == nil {
				return
			}
			st := h.check.Status()
			if len(st) == 0 || !st[0].Answered {
				t.Errorf("status before any check: %+v, want every address answered", st)
			}
		})
	}
}

// TestAnswerCheckAddedLater: a dns.answer_check that appears in the file
// after setup makes no check that nothing would run (every address would
// look up forever); it is logged and applies after a restart.
func TestAnswerCheckAddedLater(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "snigate.yaml", snigateYAML("route.example.test")+"dns:\n  answer: [\"192.0.2.98\"]\n")
	s, err := parse(caddy.NewTestController("dns", "snigate {\nconfig "+file+"\nreload 0\n}"))
	if err != nil {
		t.Fatal(err)
	}
	log := &recordingLog{}
	b := &builder{s: s, log: log}
	cfg, err := config.LoadWithoutFiles(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.build(cfg); err != nil || b.check != nil {
		t.Fatalf("first build: check %v, err %v; want none", b.check, err)
	}
	cfg.DNS.AnswerCheck = &config.AnswerCheck{Port: 443, Interval: time.Second, Timeout: time.Second, Fall: 1, Rise: 1}
	if _, _, err := b.build(cfg); err != nil || b.check != nil {
		t.Fatalf("later build: check %v, err %v; want none", b.check, err)
	}
	if log.count("dns.answer_check was added to the file after start") != 1 {
		t.Errorf("not logged once: %q", log.Lines())
	}
}
