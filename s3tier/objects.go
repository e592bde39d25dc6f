package s3tier

import (
	"context"
	"io"

	"github.com/minio/minio-go/v7"
)

// objects is the part of the S3 API the tier calls: minio-go's client
// (minioObjects), or a store in memory in the tests of the coordination.
type objects interface {
	StatObject(ctx context.Context, bucket, key string, opts minio.StatObjectOptions) (minio.ObjectInfo, error)
	// GetObject returns the object's body once the store has answered.
	GetObject(ctx context.Context, bucket, key string, opts minio.GetObjectOptions) (io.ReadCloser, error)
	PutObject(ctx context.Context, bucket, key string, r io.Reader, size int64, opts minio.PutObjectOptions) (minio.UploadInfo, error)
	RemoveObject(ctx context.Context, bucket, key string, opts minio.RemoveObjectOptions) error
	BucketExists(ctx context.Context, bucket string) (bool, error)
}

// minioObjects is a *minio.Client as objects.
type minioObjects struct{ *minio.Client }

var _ objects = minioObjects{}

// GetObject sends the GET (minio-go sends it at the first Stat or Read)
// and returns the body once the store answered.
func (m minioObjects) GetObject(ctx context.Context, bucket, key string, opts minio.GetObjectOptions) (io.ReadCloser, error) {
	obj, err := m.Client.GetObject(ctx, bucket, key, opts)
	if err != nil {
		return nil, err
	}
	if _, err := obj.Stat(); err != nil {
		obj.Close()
		return nil, err
	}
	return obj, nil
}
