package httpverify

import (
	"context"
	"sync"
)

// keyLocks lets one request at a time check the signatures of a digest:
// the nodes pulling a new image at once wait for the first one's
// decision instead of each reading and verifying its signatures.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]chan struct{}
	// waitFunc, when set (tests), is called each time a request starts
	// waiting for another's check.
	waitFunc func()
}

// lock waits until key is free (or ctx ends) and takes it; unlock frees
// it.
func (k *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	for {
		k.mu.Lock()
		if k.m == nil {
			k.m = map[string]chan struct{}{}
		}
		held, busy := k.m[key]
		if !busy {
			ch := make(chan struct{})
			k.m[key] = ch
			k.mu.Unlock()
			return func() {
				k.mu.Lock()
				delete(k.m, key)
				k.mu.Unlock()
				close(ch)
			}, nil
		}
		k.mu.Unlock()
		if k.waitFunc != nil {
			k.waitFunc()
		}
		select {
		case <-held:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}
