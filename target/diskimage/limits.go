package diskimage

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Limits bound what one image may cost the scanner. An image is untrusted
// input: the sizes it declares are checked against the file, and what is left
// is capped here, so that no image can exhaust memory or time.
type Limits struct {
	// MaxMetadata caps the memory taken by the tables whose size an image
	// declares: qcow2 L1 and refcount tables, the per-cluster counts of the
	// structure check, across a whole backing chain. The caches of L2
	// tables and inflated clusters are fixed in size and not counted.
	MaxMetadata int64
	// MaxBytes caps the work of one Image: the bytes the filesystem reader
	// reads from the disk, plus the qcow2 metadata read and the bytes
	// inflated from compressed clusters.
	MaxBytes int64
	// Deadline bounds the time from Open until the last read of the image.
	Deadline time.Duration
}

// DefaultLimits are what Open uses where Options leaves a limit zero. A
// baked image scans well within them: the structure check reads only
// metadata, and collectors read a small part of the filesystem.
// The byte budget leaves room for an SBOM's walk of the whole tree, which
// costs more than its size: go-diskfs rereads every directory of a path
// from the root on each lookup.
var DefaultLimits = Limits{
	MaxMetadata: 256 << 20,
	MaxBytes:    16 << 30,
	Deadline:    5 * time.Minute,
}

// Fixed bounds of the caches and of the tables not sized by the header.
const (
	// l2CacheBytes and inflateCacheBytes size the caches of L2 tables and
	// of inflated compressed clusters, shared by a backing chain.
	l2CacheBytes      = 16 << 20
	inflateCacheBytes = 32 << 20
	// maxChain is how deep a backing chain may go.
	maxChain = 8
)

// ErrLimit is wrapped by every error that a limit of Limits ended.
var ErrLimit = errors.New("limit reached")

// work is what one Image may still spend. It is shared by every file of a
// backing chain and by every reader over the disk, so a limit holds for the
// image as a whole.
type work struct {
	ctx      context.Context
	limits   Limits
	deadline time.Time

	mu   sync.Mutex
	read int64
	mem  int64
	// inflated counts the clusters inflated, which the cache keeps few.
	inflated int
	// stop, once set, fails every later charge: a scan that hit a limit
	// must not go on reading in pieces under it.
	stop error

	l2   *lru
	zbuf *lru
}

func newWork(ctx context.Context, l Limits) *work {
	if l.MaxMetadata <= 0 {
		l.MaxMetadata = DefaultLimits.MaxMetadata
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxBytes
	}
	if l.Deadline <= 0 {
		l.Deadline = DefaultLimits.Deadline
	}
	if ctx == nil {
		ctx = context.Background()
	}
	return &work{
		ctx: ctx, limits: l, deadline: time.Now().Add(l.Deadline),
		l2: newLRU(l2CacheBytes), zbuf: newLRU(inflateCacheBytes),
	}
}

// charge counts n bytes read or inflated, and fails once the byte budget or
// the deadline is spent or the context is done.
func (w *work) charge(n int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		return w.stop
	}
	w.read += int64(n)
	switch {
	case w.read > w.limits.MaxBytes:
		w.stop = fmt.Errorf("%w: more than %d bytes read or inflated, the byte budget of one image scan", ErrLimit, w.limits.MaxBytes)
	case time.Now().After(w.deadline):
		w.stop = fmt.Errorf("%w: the scan of the image ran past its deadline of %s", ErrLimit, w.limits.Deadline)
	case w.ctx.Err() != nil:
		w.stop = fmt.Errorf("scan interrupted: %w", context.Cause(w.ctx))
	}
	return w.stop
}

// alloc reserves n bytes of metadata memory for what, before it is
// allocated.
func (w *work) alloc(n int64, what string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n < 0 || w.mem+n > w.limits.MaxMetadata {
		return fmt.Errorf("%w: %s needs %d bytes of memory, over the %d bytes allowed for an image's metadata", ErrLimit, what, n, w.limits.MaxMetadata-w.mem)
	}
	w.mem += n
	return nil
}

// free returns what alloc reserved once the table is dropped.
func (w *work) free(n int64) {
	w.mu.Lock()
	w.mem -= n
	w.mu.Unlock()
}

// lru keeps the most recently used byte slices up to a total size.
type lru struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // of *lruItem, the most recent first
	items map[lruKey]*list.Element
}

type lruKey struct {
	file int
	off  uint64
	n    int
}

type lruItem struct {
	key  lruKey
	data []byte
}

func newLRU(max int) *lru {
	return &lru{max: max, order: list.New(), items: map[lruKey]*list.Element{}}
}

func (c *lru) get(k lruKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruItem).data, true
}

// put keeps data under k, dropping the least recently used entries to make
// room.
func (c *lru) put(k lruKey, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok || len(data) > c.max {
		return
	}
	for c.size+len(data) > c.max {
		old := c.order.Remove(c.order.Back()).(*lruItem)
		delete(c.items, old.key)
		c.size -= len(old.data)
	}
	c.items[k] = c.order.PushFront(&lruItem{key: k, data: data})
	c.size += len(data)
}
