package httpbridge

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	dgst  = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	dgst5 = "sha512:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)
