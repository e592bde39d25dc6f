package oci

import (
	"errors"
	"strings"
)

// Reference is an image in a repository: by Tag or by Digest (exactly
// one set), without the registry's host (pin entries, and the part of an
// image reference after its host).
type Reference struct {
	Repository string
	Tag        string
	Digest     string
}

// String is "repository:tag" or "repository@digest".
func (r Reference) String() string {
	if r.Digest != "" {
		return r.Repository + "@" + r.Digest
	}
	return r.Repository + ":" + r.Tag
}

// Ref is the manifest path's reference: the digest, else the tag.
func (r Reference) Ref() string {
	if r.Digest != "" {
		return r.Digest
	}
	return r.Tag
}

// ErrReference is the error of ParseReference for a string that is not
// repository:tag or repository@digest.
var ErrReference = errors.New(`want repository:tag or repository@digest, such as "team/app:v1.2" or "team/app@sha256:<64 hex>"`)

// ParseReference parses "repository:tag" or "repository@digest" (a tag
// and a digest together, "repository:tag@digest", keep the digest). The
// repository must be a valid name, the tag and digest valid too.
func ParseReference(s string) (Reference, error) {
	var r Reference
	name := s
	if n, d, ok := strings.Cut(s, "@"); ok {
		if !ValidDigest(d) {
			return r, ErrReference
		}
		name, r.Digest = n, d
	}
	slash := strings.LastIndex(name, "/")
	if i := strings.LastIndex(name, ":"); i > slash {
		if r.Digest == "" {
			r.Tag = name[i+1:]
		}
		if !ValidTag(name[i+1:]) {
			return Reference{}, ErrReference
		}
		name = name[:i]
	}
	if !ValidName(name) || r.Tag == "" && r.Digest == "" {
		return Reference{}, ErrReference
	}
	r.Repository = name
	return r, nil
}

// ImageReference is a full image reference: the registry's Host and the
// image in it.
type ImageReference struct {
	Host string
	Reference
}

// String is "host/repository:tag" or "host/repository@digest".
func (r ImageReference) String() string { return r.Host + "/" + r.Reference.String() }

// ErrImageReference is the error of ParseImageReference for a string
// that is not host/repository:tag or host/repository@digest.
var ErrImageReference = errors.New(`want host/repository:tag or host/repository@digest, such as "registry.example.com/team/app:v1.2"`)

// ParseImageReference parses "host/repository:tag" or
// "host/repository@digest": the first path component is the registry's
// host (a name the gateway routes), which must look like one, as Docker
// reads references: with a "." or a ":" (a port), or "localhost".
func ParseImageReference(s string) (ImageReference, error) {
	host, rest, ok := strings.Cut(s, "/")
	if !ok || host == "" || strings.ContainsAny(host, "@ ") || !strings.ContainsAny(host, ".:") && host != "localhost" {
		return ImageReference{}, ErrImageReference
	}
	ref, err := ParseReference(rest)
	if err != nil {
		return ImageReference{}, ErrImageReference
	}
	return ImageReference{Host: strings.ToLower(host), Reference: ref}, nil
}
