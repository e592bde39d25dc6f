package regauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const manifestPath = "/v2/team/app/manifests/v1"

func TestBearerPullOfPushedImage(t *testing.T) {
	w := newTokenWorld(t)
	want := w.push(t, "team/app")
	before := w.ts.Total()
	got, err := w.pull(t, w.transport(t, nil, false), "team/app")
	if err != nil {
		t.Fatalf("pull through the Transport: %v", err)
	}
	if got != want {
		t.Fatalf("pulled digest %s, pushed %s", got, want)
	}
	if n := w.ts.Requests("repository:team/app:pull"); n != 1 {
		t.Errorf("%d tokens asked for repository:team/app:pull during the pull, want 1", n)
	}
	subjects := w.ts.Subjects()[before:]
	for _, s := range subjects {
		if s != testUser {
			t.Errorf("a token of the pull was asked for %q, want the gateway's %q", s, testUser)
		}
	}
}

func TestBearerOneTokenForManyRequestsOfOneScope(t *testing.T) {
	w := newTokenWorld(t)
	w.push(t, "team/app")
	rt := w.transport(t, nil, false)
	var wg sync.WaitGroup
	for range 50 { // cold: all 50 meet the challenge at about the same time
		wg.Go(func() {
			resp, err := w.get(t, rt, manifestPath, "")
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("concurrent GET: %v %v", resp, err)
			}
		})
	}
	wg.Wait()
	for range 20 {
		w.mustGet200(t, rt, manifestPath, "")
	}
	if n := w.ts.Requests("repository:team/app:pull"); n != 1 {
		t.Fatalf("%d token requests for 70 requests of one scope, want 1", n)
	}
	if f, c := w.tokens(ResultFetched), w.tokens(ResultCached); f != 1 || c < 20 {
		t.Errorf("tokens fetched %d, cached %d; want 1 and at least 20", f, c)
	}
}

func TestBearerNewTokenAfterExpiry(t *testing.T) {
	w := newTokenWorld(t)
	w.push(t, "team/app")
	rt := w.transport(t, nil, false)
	w.mustGet200(t, rt, manifestPath, "")
	w.mustGet200(t, rt, manifestPath, "")
	ageTokens(rt, w.ts.ExpiresIn())
	w.mustGet200(t, rt, manifestPath, "")
	if n := w.ts.Requests("repository:team/app:pull"); n != 2 {
		t.Fatalf("%d token requests, want 2: one, and one after the first expired", n)
	}
}

func TestBearerTokenRefusedBeforeItsTimeIsReplaced(t *testing.T) {
	w := newTokenWorld(t)
	w.push(t, "team/app")
	w.push(t, "team/other")
	rt := w.transport(t, nil, false)
	w.mustGet200(t, rt, manifestPath, "") // the registry's challenge is known now
	w.ts.ExpireNext(1)                    // the next token is expired for the registry
	w.mustGet200(t, rt, "/v2/team/other/manifests/v1", "")
	if n := w.ts.Requests("repository:team/other:pull"); n != 2 {
		t.Fatalf("%d token requests for team/other, want 2 (the refused one, its replacement)", n)
	}
}

func TestBearerRotatedPasswordUsedOnNextToken(t *testing.T) {
	w := newTokenWorld(t)
	w.push(t, "team/app")
	rt := w.transport(t, nil, false)
	w.mustGet200(t, rt, manifestPath, "")
	w.ts.SetUser(testUser, "second-Passw0rd") // the old password stops working
	writeFile(t, w.pwFile, "second-Passw0rd\n")
	ageTokens(rt, w.ts.ExpiresIn())
	w.mustGet200(t, rt, manifestPath, "")
	if r := w.tokens(ResultRefused); r != 0 {
		t.Fatalf("%d refusals: the old password was sent after the rotation", r)
	}
}

func TestBearerWrongPasswordIsRefused(t *testing.T) {
	w := newTokenWorld(t)
	writeFile(t, w.pwFile, "wrong-"+testSecret+"\n")
	rt := w.transport(t, nil, false)
	for range 3 {
		_, err := w.get(t, rt, manifestPath, "")
		var re *RefusedError
		if !errors.As(err, &re) || re.Status != http.StatusUnauthorized || !strings.Contains(re.By, "token service") {
			t.Fatalf("err = %v, want a RefusedError from the token service", err)
		}
		assertNoSecret(t, err, testSecret)
	}
	if r := w.tokens(ResultRefused); r != 3 {
		t.Errorf("refused = %d, want 3", r)
	}
	if n := w.ts.Requests("repository:team/app:pull"); n != 2 {
		t.Errorf("%d token requests with the refused password, want 2 (the password grant and its GET, once: the error is remembered)", n)
	}
	logs := w.logs.String()
	if strings.Count(logs, "registry refused the gateway's credentials") != 1 || strings.Contains(logs, testSecret) {
		t.Errorf("want one rate-limited Warn without the password, got:\n%s", logs)
	}
	rec := httptest.NewRecorder()
	WriteRefused(rec)
	var body struct {
		Errors []struct{ Code, Message string }
	}
	if rec.Code != http.StatusUnauthorized || json.Unmarshal(rec.Body.Bytes(), &body) != nil ||
		body.Errors[0].Code != "UNAUTHORIZED" || body.Errors[0].Message != RefusedMessage {
		t.Errorf("WriteRefused: %d %s", rec.Code, rec.Body)
	}
}

func TestBearerNodeAuthorizationMakesNoDifference(t *testing.T) {
	w := newTokenWorld(t)
	w.push(t, "team/app")
	rt := w.transport(t, nil, false)
	for _, nodeAuth := range []string{"Bearer node-own-token", "Basic " + b64("robot:wrong"), "garbage"} {
		w.mustGet200(t, rt, manifestPath, nodeAuth)
	}
	for _, s := range w.ts.Subjects()[1:] { // [0] is the push
		if s != testUser {
			t.Errorf("a token was asked for %q", s)
		}
	}
}

func TestBearerPushWhenWritingAllowed(t *testing.T) {
	w := newTokenWorld(t)
	img := w.push(t, "team/app")
	// Read the image back and write it elsewhere through the Transport.
	rt := w.transport(t, nil, true)
	if _, err := w.pull(t, rt, "team/app"); err != nil {
		t.Fatal(err)
	}
	resp, err := w.get(t, rt, "/v2/team/app/manifests/v1", "")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%v %v", resp, err)
	}
	req, _ := http.NewRequestWithContext(testContext(t), http.MethodPost, "https://"+w.reg.Addr+"/v2/team/copy/blobs/uploads/", nil)
	resp, err = rt.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload start with writing allowed: %v %v", resp, err)
	}
	_ = resp.Body.Close()
	if n := w.ts.Requests("repository:team/copy:pull,push"); n != 1 {
		t.Errorf("%d tokens for repository:team/copy:pull,push, want 1", n)
	}
	ro := w.transport(t, nil, false)
	req, _ = http.NewRequestWithContext(testContext(t), http.MethodPost, "https://"+w.reg.Addr+"/v2/team/copy2/blobs/uploads/", nil)
	if resp, err := ro.RoundTrip(req); err == nil {
		_ = resp.Body.Close()
		t.Fatalf("upload start without writing allowed: %s, want a refusal", resp.Status)
	}
	if w.ts.Requests("repository:team/copy2:pull,push") != 0 {
		t.Error("a push token was asked for a route that does not allow writing")
	}
	_ = img
}

func TestBearerIdentityTokenFromDockerConfig(t *testing.T) {
	w := newTokenWorld(t)
	w.push(t, "team/app")
	w.ts.AddRefreshToken("refresh-"+testSecret, testUser)
	path := filepath.Join(t.TempDir(), "config.json")
	writeFile(t, path, `{"auths":{"`+w.reg.Addr+`":{"identitytoken":"refresh-`+testSecret+`"}}}`)
	if _, err := w.pull(t, w.transport(t, NewDockerConfig(path, w.reg.Addr), false), "team/app"); err != nil {
		t.Fatalf("pull with an identity token: %v", err)
	}
}

func TestBearerCredentialHelper(t *testing.T) {
	w := newTokenWorld(t)
	w.push(t, "team/app")
	installHelper(t)
	w.ts.SetUser("u", w.reg.Addr+"-pass") // what docker-credential-test answers
	path := filepath.Join(t.TempDir(), "config.json")
	writeFile(t, path, `{"credHelpers":{"`+w.reg.Addr+`":"test"}}`)
	if _, err := w.pull(t, w.transport(t, NewDockerConfig(path, w.reg.Addr), false), "team/app"); err != nil {
		t.Fatalf("pull with a credential helper: %v", err)
	}
}

func TestBearerAnonymous(t *testing.T) {
	w := newTokenWorld(t)
	want := w.push(t, "public/tool")
	w.push(t, "team/app")
	rt := w.transport(t, Anonymous, false)
	got, err := w.pull(t, rt, "public/tool")
	if err != nil || got != want {
		t.Fatalf("anonymous pull of a public repository: %s, %v", got, err)
	}
	if _, err := w.get(t, rt, manifestPath, ""); !errors.As(err, new(*RefusedError)) {
		t.Fatalf("anonymous GET of a private repository: %v, want a RefusedError", err)
	}
}

// TestTokenRegistryVerifiesSignatures shows the token world is real:
// docker-registry refuses a token signed by a key its rootcertbundle
// does not hold.
func TestTokenRegistryVerifiesSignatures(t *testing.T) {
	w := newTokenWorld(t)
	w.push(t, "team/app")
	w.ts.RotateKey(t) // a new key and certificate the registry never saw
	_, err := w.get(t, w.transport(t, nil, false), manifestPath, "")
	var re *RefusedError
	if !errors.As(err, &re) || re.By != "registry" {
		t.Fatalf("a token of a foreign key: %v, want the registry's refusal", err)
	}
}
