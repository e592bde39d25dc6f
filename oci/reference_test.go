package oci

import (
	"strings"
	"testing"
)

func TestParseReference(t *testing.T) {
	d := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		name string
		in   string
		want Reference
		ok   bool
	}{
		{name: "tag", in: "team/app:v1.2", want: Reference{Repository: "team/app", Tag: "v1.2"}, ok: true},
		{name: "digest", in: "base/debian@" + d, want: Reference{Repository: "base/debian", Digest: d}, ok: true},
		{name: "tag and digest keep the digest", in: "a:v1@" + d, want: Reference{Repository: "a", Digest: d}, ok: true},
		{name: "no tag", in: "team/app"},
		{name: "bad digest", in: "team/app@sha256:xyz"},
		{name: "upper case name", in: "Team/app:v1"},
		{name: "bad tag", in: "team/app:-x"},
		{name: "port-like component is not a tag", in: "host:5000/app"},
		{name: "empty", in: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseReference(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("ParseReference(%q) = %+v, %v; want %+v ok=%v", tt.in, got, err, tt.want, tt.ok)
			}
			if tt.ok && got.String() != tt.in && tt.name != "tag and digest keep the digest" {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

func TestParseImageReference(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want ImageReference
		ok   bool
	}{
		{name: "host and tag", in: "Registry.Example.com/team/app:v1", want: ImageReference{Host: "registry.example.com", Reference: Reference{Repository: "team/app", Tag: "v1"}}, ok: true},
		{name: "host with port", in: "registry.example.com:5000/app:v1", want: ImageReference{Host: "registry.example.com:5000", Reference: Reference{Repository: "app", Tag: "v1"}}, ok: true},
		{name: "no host", in: "app:v1"},
		{name: "first component not a host", in: "team/app:v1"},
		{name: "localhost", in: "localhost/app@sha256:" + strings.Repeat("a", 64), want: ImageReference{Host: "localhost", Reference: Reference{Repository: "app", Digest: "sha256:" + strings.Repeat("a", 64)}}, ok: true},
		{name: "no tag", in: "registry.example.com/app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseImageReference(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("ParseImageReference(%q) = %+v, %v; want %+v ok=%v", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
}
