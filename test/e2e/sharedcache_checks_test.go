package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// The fleet's checks of what is stored: the bucket's objects and the
// gateways' cache directories hold nothing but complete, verified content.

// fleetPrefix is the gateways' key prefix in the bucket.
const fleetPrefix = "e2e/"

// objectKey is the bucket's key of digest.
func objectKey(digest string) string {
	hex := strings.TrimPrefix(digest, "sha256:")
	return fleetPrefix + "sha256/" + hex[:2] + "/" + hex
}

// leaseKey is the bucket's key of digest's lease (a fill in flight).
func leaseKey(digest string) string {
	return fleetPrefix + "leases/sha256/" + strings.TrimPrefix(digest, "sha256:")
}

// corruptObject overwrites the layer's object with other bytes of the
// same length, its metadata still naming the digest.
func (f *fleet) corruptObject(t *testing.T, img *cachedImage) {
	t.Helper()
	bad := strings.Repeat("x", int(img.size))
	_, err := f.s3Client(t).PutObject(context.Background(), fleetBucket, objectKey(img.layer), strings.NewReader(bad), img.size,
		minio.PutObjectOptions{UserMetadata: map[string]string{"Digest": img.layer}})
	if err != nil {
		t.Fatal(err)
	}
}

// waitObject waits until the bucket holds exactly the layer's bytes.
func (f *fleet) waitObject(t *testing.T, img *cachedImage) {
	t.Helper()
	cl := f.s3Client(t)
	err := poll(startTries, 5*pollStep, func() error {
		return objectDigestIs(cl, objectKey(img.layer), img.layer)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// objectDigestIs checks that the bucket's object key hashes to want.
func objectDigestIs(cl *minio.Client, key, want string) error {
	obj, err := cl.GetObject(context.Background(), fleetBucket, key, minio.GetObjectOptions{})
	if err != nil {
		return err
	}
	defer obj.Close()
	h := sha256.New()
	if _, err := io.Copy(h, obj); err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("the bucket's object %s has digest %s, want %s", key, got, want)
	}
	return nil
}

// checkBucketWhole lists the gateways' prefix in the bucket: every object
// under a digest's key holds that digest's exact bytes, and no lease is
// left (every fill is over). It waits for the last lease's removal, which
// follows its upload's completion.
func (f *fleet) checkBucketWhole(t *testing.T) {
	t.Helper()
	cl := f.s3Client(t)
	err := poll(startTries, 5*pollStep, func() error {
		var errs []error
		n := 0
		for oi := range cl.ListObjects(context.Background(), fleetBucket, minio.ListObjectsOptions{Prefix: fleetPrefix, Recursive: true}) {
			switch {
			case oi.Err != nil:
				return oi.Err
			case strings.HasPrefix(oi.Key, fleetPrefix+"leases/"):
				errs = append(errs, fmt.Errorf("a lease is left: %s", oi.Key))
			case strings.HasPrefix(oi.Key, fleetPrefix+"sha256/"):
				n++
				errs = append(errs, objectDigestIs(cl, oi.Key, "sha256:"+filepath.Base(oi.Key)))
			default:
				errs = append(errs, fmt.Errorf("an object that is no digest's: %s", oi.Key))
			}
		}
		if n == 0 {
			errs = append(errs, errors.New("the bucket holds no content"))
		}
		return errors.Join(errs...)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkDirWhole checks gateway i's cache directory: every content file
// holds its digest's exact bytes, beside its metadata (what a cache
// serves); fills in flight (tmp/) are not looked at.
func (f *fleet) checkDirWhole(t *testing.T, i int) {
	t.Helper()
	root := filepath.Join(f.dirs[i], "sha256")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist) && path == root:
			return nil
		case err != nil:
			return err
		case d.IsDir() || strings.HasSuffix(path, ".meta"):
			return nil
		}
		if _, err := os.Stat(path + ".meta"); err != nil {
			return nil // no metadata: never served, removed at the next Open
		}
		return fileDigestIs(path, "sha256:"+d.Name())
	})
	if err != nil {
		t.Errorf("gateway %d's cache directory: %v", i, err)
	}
}

// stored reports whether gateway i's cache directory holds digest's
// content as stored (the content file and its metadata).
func (f *fleet) stored(i int, digest string) bool {
	hex := strings.TrimPrefix(digest, "sha256:")
	p := filepath.Join(f.dirs[i], "sha256", hex[:2], hex)
	_, err1 := os.Stat(p)
	_, err2 := os.Stat(p + ".meta")
	return err1 == nil && err2 == nil
}

// startFill starts a GET of img's layer through gateway 0 alone and reads
// its first MiB: gateway 0 holds the fleet's lease and fills from the
// registry. The caller closes the connection.
func (f *fleet) startFill(t *testing.T, img *cachedImage) io.Closer {
	t.Helper()
	conn, err := tlsDialIn(f.node, gatewayAddr(0)+":443", f.tlsCfg.Clone())
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(2 * cmdTimeout))
	req, _ := http.NewRequest(http.MethodGet, "https://"+registryHost+img.layerURI, nil)
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET through gateway 0: %v %v", resp, err)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, 1<<20); err != nil {
		t.Fatalf("first MiB: %v", err)
	}
	return conn
}

// killMidFill SIGKILLs gateway 0 in the middle of the fleet's fill of
// img's layer (its lease in the bucket, the object not yet there), then
// GETs the layer through the two others, which must complete: one of them
// takes the dead gateway's lease over and fetches the layer again.
func (f *fleet) killMidFill(t *testing.T, img *cachedImage) {
	t.Helper()
	conn := f.startFill(t, img)
	defer conn.Close()
	cl := f.s3Client(t)
	if _, err := cl.StatObject(context.Background(), fleetBucket, leaseKey(img.layer), minio.StatObjectOptions{}); err != nil {
		t.Fatalf("gateway 0 reads the fill but holds no lease: %v", err)
	}
	if _, err := cl.StatObject(context.Background(), fleetBucket, objectKey(img.layer), minio.StatObjectOptions{}); err == nil {
		t.Fatal("the layer is in the bucket already: gateway 0 is not mid-fill")
	}
	f.gws[0].proc.kill()
	if f.stored(0, img.layer) {
		t.Error("the killed gateway's cache directory holds the layer it was filling")
	}
	var wg sync.WaitGroup
	errs := make(chan error, fleetSize-1)
	for i := 1; i < fleetSize; i++ {
		wg.Go(func() { errs <- f.getLayer(i, img) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	took := 0
	for i := 1; i < fleetSize; i++ {
		took += strings.Count(readFile(t, f.gws[i].log), "took over the shared tier's fill")
	}
	if took != 1 {
		t.Errorf("%d gateways logged taking the dead gateway's lease over, want 1", took)
	}
}

// readFile is path's content.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
