package regauth

import (
	"errors"
	"net/http"
	"testing"
)

func TestBasicPullOfPushedImage(t *testing.T) {
	w := newBasicWorld(t)
	want := w.push(t, "team/app")
	got, err := w.pull(t, w.transport(t, nil, false), "team/app")
	if err != nil || got != want {
		t.Fatalf("pull through the Transport: %s, %v; want %s", got, err, want)
	}
}

func TestBasicNodeAuthorizationMakesNoDifference(t *testing.T) {
	w := newBasicWorld(t)
	w.push(t, "team/app")
	rt := w.transport(t, nil, false)
	w.mustGet200(t, rt, manifestPath, "Basic "+b64("robot:wrong"))
	w.mustGet200(t, rt, manifestPath, "Bearer node")
}

func TestBasicWrongPasswordIsRefused(t *testing.T) {
	w := newBasicWorld(t)
	writeFile(t, w.pwFile, "wrong-"+testSecret+"\n")
	_, err := w.get(t, w.transport(t, nil, false), manifestPath, "")
	var re *RefusedError
	if !errors.As(err, &re) || re.By != "registry" || re.Status != http.StatusUnauthorized {
		t.Fatalf("err = %v, want a RefusedError by the registry", err)
	}
	assertNoSecret(t, err, testSecret)
	if r := w.tokens(ResultRefused); r != 1 {
		t.Errorf("refused = %d, want 1", r)
	}
}

func TestBasicRotatedPassword(t *testing.T) {
	w := newBasicWorld(t)
	w.push(t, "team/app")
	writeFile(t, w.pwFile, "wrong\n")
	rt := w.transport(t, nil, false)
	if _, err := w.get(t, rt, manifestPath, ""); err == nil {
		t.Fatal("a wrong password was accepted")
	}
	writeFile(t, w.pwFile, testPassword+"\n")
	w.mustGet200(t, rt, manifestPath, "")
}

func TestBasicAnonymousIsRefused(t *testing.T) {
	w := newBasicWorld(t)
	_, err := w.get(t, w.transport(t, Anonymous, false), manifestPath, "")
	if !errors.As(err, new(*RefusedError)) {
		t.Fatalf("err = %v, want a RefusedError: the registry asks for Basic and the gateway has none", err)
	}
	if r := w.tokens(ResultRefused); r != 1 {
		t.Errorf("refused = %d, want 1", r)
	}
}
