package nodeconfig

import (
	"bytes"
	"encoding/pem"
	"testing"

	"github.com/snigate/snigate/internal/pki"
)

func TestAnchor(t *testing.T) {
	root, err := pki.NewAuthority("root")
	if err != nil {
		t.Fatal(err)
	}
	inter, err := root.Intermediate("inter")
	if err != nil {
		t.Fatal(err)
	}
	chained, err := inter.Issue(pki.SANs("r.example"))
	if err != nil {
		t.Fatal(err)
	}
	alone, err := root.Issue(pki.SANs("r.example"))
	if err != nil {
		t.Fatal(err)
	}
	withRoot := append(append([]byte{}, chained.CertPEM...), root.PEM...)
	tests := []struct {
		name       string
		in         []byte
		want       []byte
		wantPinned bool
		wantErr    bool
	}{
		{name: "leaf, intermediate and root: the root", in: withRoot, want: root.PEM},
		{name: "leaf and intermediate: the intermediate", in: chained.CertPEM, want: inter.PEM},
		{name: "leaf alone: pinned", in: alone.CertPEM, want: alone.CertPEM, wantPinned: true},
		{name: "a key is no certificate", in: alone.KeyPEM, wantErr: true},
		{name: "garbage", in: []byte("not pem"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, pinned, err := Anchor(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if !bytes.Equal(der(t, got), der(t, tt.want)) || pinned != tt.wantPinned {
				t.Errorf("anchor differs or pinned = %v, want %v", pinned, tt.wantPinned)
			}
		})
	}
}

func der(t *testing.T, b []byte) []byte {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("no PEM in %q", b)
	}
	return blk.Bytes
}
