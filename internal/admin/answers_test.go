package admin

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/dnsresponder"
)

type fakeAnswers []dnsresponder.AnswerStatus

func (f fakeAnswers) Answers() []dnsresponder.AnswerStatus { return f }

var someAnswers = fakeAnswers{
	{Address: "10.0.0.5", Healthy: true, Answered: true, LastCheck: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)},
	{Address: "10.0.0.6", Healthy: false, Answered: false, LastError: "connect: connection refused"},
	{Address: "10.0.0.7", Healthy: true, LeftOut: true},
}

// TestListAnswers: GET /api/answers through the Client that `snigate ctl
// answers` uses.
func TestListAnswers(t *testing.T) {
	tests := []struct {
		name     string
		answers  answerLister
		wantCode int // 0: 200
		wantErr  string
	}{
		{name: "addresses", answers: someAnswers},
		{name: "no dns.answer_check", answers: fakeAnswers(nil), wantCode: 404, wantErr: "no dns.answer_check in the configuration"},
		{name: "no runtime API", answers: nil, wantCode: 503, wantErr: "not available"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := startServer(t, Config{Answers: tc.answers}, "127.0.0.1:0")
			got, err := (&Client{Addr: addr}).Answers(context.Background())
			var apiErr *APIError
			switch {
			case tc.wantCode == 0 && err != nil:
				t.Fatal(err)
			case tc.wantCode == 0:
				if !reflect.DeepEqual(got, []dnsresponder.AnswerStatus(someAnswers)) {
					t.Errorf("got %+v\nwant %+v", got, someAnswers)
				}
			case !errors.As(err, &apiErr) || apiErr.StatusCode != tc.wantCode || !strings.Contains(apiErr.Message, tc.wantErr):
				t.Errorf("error %v, want HTTP %d with %q", err, tc.wantCode, tc.wantErr)
			}
		})
	}
}

func TestListAnswersMethod(t *testing.T) {
	_, addr := startServer(t, Config{Answers: someAnswers}, "127.0.0.1:0")
	if a := call(t, "POST", addr, "/api/answers", "application/json", "{}"); a.code != 405 {
		t.Errorf("POST /api/answers: %d, want 405", a.code)
	}
}

func TestWriteAnswerTableGolden(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 2, 0, time.UTC)
	var b strings.Builder
	if err := writeAnswerTable(&b, someAnswers, now); err != nil {
		t.Fatal(err)
	}
	want := `ADDRESS   HEALTH  ANSWERED            LAST_CHECK  LAST_ERROR
10.0.0.5  up      yes                 2s ago      -
10.0.0.6  down    no                  never       connect: connection refused
10.0.0.7  up      no (own, draining)  never       -
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}
