package s3tier

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"
)

// ProbeStep is one step of Probe: what it did and its error (nil: ok).
type ProbeStep struct {
	Step string // "bucket", "put", "get", "delete"
	Err  error
}

// Probe checks that the tier can be used: the bucket answers (HEAD), and
// a probe object under PREFIX/probe/ can be written, read back whole and
// deleted (the permissions a gateway needs). It stops at the first step
// that fails; each step has CallTimeout.
func (t *Tier) Probe(ctx context.Context) []ProbeStep {
	var out []ProbeStep
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	key := t.cfg.Prefix + "probe/" + hex.EncodeToString(nonce[:])
	body := []byte("snigate shared cache probe " + key)
	for _, s := range []struct {
		name string
		fn   func(ctx context.Context) error
	}{
		{"bucket", t.probeBucket},
		{"put", func(ctx context.Context) error {
			_, err := t.cl.PutObject(ctx, t.cfg.Bucket, key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
			return err
		}},
		{"get", func(ctx context.Context) error { return t.probeGet(ctx, key, body) }},
		{"delete", func(ctx context.Context) error {
			return t.cl.RemoveObject(ctx, t.cfg.Bucket, key, minio.RemoveObjectOptions{})
		}},
	} {
		cctx, cancel := t.call(ctx)
		err := s.fn(cctx)
		cancel()
		out = append(out, ProbeStep{Step: s.name, Err: err})
		if err != nil {
			break
		}
	}
	return out
}

func (t *Tier) probeBucket(ctx context.Context) error {
	ok, err := t.cl.BucketExists(ctx, t.cfg.Bucket)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("bucket %q does not exist: create it (the gateways do not)", t.cfg.Bucket)
	}
	return nil
}

func (t *Tier) probeGet(ctx context.Context, key string, want []byte) error {
	obj, err := t.cl.GetObject(ctx, t.cfg.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return err
	}
	defer obj.Close()
	got, err := io.ReadAll(io.LimitReader(obj, int64(len(want))+1))
	switch {
	case err != nil:
		return err
	case !bytes.Equal(got, want):
		return fmt.Errorf("read back %d bytes that differ from the %d written", len(got), len(want))
	}
	return nil
}
