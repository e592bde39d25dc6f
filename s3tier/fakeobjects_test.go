package s3tier

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/snigate/snigate/internal/testkit"
)

// fakeObjects is an S3 bucket in memory with S3's conditional writes
// (If-None-Match: *, If-Match: ETag), for the tests of the coordination
// without a network. Every object reports lastModified, whatever the
// clocks say. fail, when set, fails every call. ignoreIfMatch makes PUT
// ignore If-Match: the worst case of a store that checks it without a
// lock, as SeaweedFS does (two PUTs that overlap both succeed), while
// If-None-Match: * still holds (SeaweedFS creates under a lock).
type fakeObjects struct {
	mu            sync.Mutex
	objs          map[string]fakeObject
	etags         int
	lastModified  time.Time
	fail          error
	ignoreIfMatch bool
}

type fakeObject struct {
	data  []byte
	etag  string
	ctype string
	meta  map[string]string
}

var _ objects = (*fakeObjects)(nil)

func newFakeObjects(lastModified time.Time) *fakeObjects {
	return &fakeObjects{objs: map[string]fakeObject{}, lastModified: lastModified}
}

func errorResponse(status int, code string) error {
	return minio.ErrorResponse{StatusCode: status, Code: code, Message: code}
}

func (f *fakeObjects) get(key string) (fakeObject, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return fakeObject{}, f.fail
	}
	o, ok := f.objs[key]
	if !ok {
		return o, errorResponse(http.StatusNotFound, "NoSuchKey")
	}
	return o, nil
}

func (f *fakeObjects) StatObject(_ context.Context, _, key string, _ minio.StatObjectOptions) (minio.ObjectInfo, error) {
	o, err := f.get(key)
	if err != nil {
		return minio.ObjectInfo{}, err
	}
	return minio.ObjectInfo{Key: key, Size: int64(len(o.data)), ETag: o.etag, ContentType: o.ctype,
		LastModified: f.lastModified, UserMetadata: o.meta}, nil
}

func (f *fakeObjects) GetObject(_ context.Context, _, key string, _ minio.GetObjectOptions) (io.ReadCloser, error) {
	o, err := f.get(key)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(o.data)), nil
}

// PutObject reads the whole body first: a body that fails stores nothing
// (as an aborted multipart upload).
func (f *fakeObjects) PutObject(_ context.Context, _, key string, r io.Reader, _ int64, opts minio.PutObjectOptions) (minio.UploadInfo, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return minio.UploadInfo{}, err
	}
	h := opts.Header()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return minio.UploadInfo{}, f.fail
	}
	cur, exists := f.objs[key]
	im := strings.Trim(h.Get("If-Match"), `"`)
	if f.ignoreIfMatch {
		im = ""
	}
	switch {
	case h.Get("If-None-Match") == "*" && exists:
		return minio.UploadInfo{}, errorResponse(http.StatusPreconditionFailed, "PreconditionFailed")
	case im != "" && !exists:
		return minio.UploadInfo{}, errorResponse(http.StatusNotFound, "NoSuchKey")
	case im != "" && im != cur.etag:
		return minio.UploadInfo{}, errorResponse(http.StatusPreconditionFailed, "PreconditionFailed")
	}
	f.etags++
	o := fakeObject{data: data, etag: "etag-" + strconv.Itoa(f.etags), ctype: opts.ContentType, meta: map[string]string{}}
	for k, v := range opts.UserMetadata {
		o.meta[k] = v
	}
	f.objs[key] = o
	return minio.UploadInfo{Key: key, ETag: o.etag, Size: int64(len(data))}, nil
}

func (f *fakeObjects) RemoveObject(_ context.Context, _, key string, _ minio.RemoveObjectOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	delete(f.objs, key)
	return nil
}

func (f *fakeObjects) BucketExists(context.Context, string) (bool, error) {
	return f.fail == nil, f.fail
}

// fakeTier is a Tier over f whose clock is skew away from the test's.
func fakeTier(t interface {
	Helper()
	Fatal(...any)
	TempDir() string
}, f *fakeObjects, owner string, skew time.Duration, logs *testkit.LogSink) *Tier {
	t.Helper()
	dir := t.TempDir()
	ak, sk := dir+"/ak", dir+"/sk"
	for _, p := range []string{ak, sk} {
		if err := writeFile(p, "key"); err != nil {
			t.Fatal(err)
		}
	}
	tier, err := New(Config{Route: "r", Endpoint: "http://s3.invalid", Bucket: "snigate-cache", Owner: owner,
		AccessKeyFile: ak, SecretKeyFile: sk, Logger: slog.New(slog.NewTextHandler(logs, nil)), Metrics: NewMetrics(nil)})
	if err != nil {
		t.Fatal(err)
	}
	tier.cl = f
	tier.now = func() time.Time { return time.Now().Add(skew) }
	return tier
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }
