package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultTimeout bounds a whole Verify, every registry read included,
// when Options.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// DefaultReadTimeout bounds each registry read when Options.ReadTimeout is
// zero: the response must start within it, and its body must then bring
// MinProgress bytes, or its end, within every further ReadTimeout.
const DefaultReadTimeout = 30 * time.Second

// MinProgress is what a response body must bring in each read timeout. A
// registry that sends a byte a second never goes idle, so a deadline on
// single reads would not cut it; a floor on progress does.
const MinProgress = 64 << 10

// ErrTimeout is wrapped when the registry was too slow: no response or a
// stalled body within the read timeout, or no verdict within the deadline.
var ErrTimeout = errors.New("timed out")

// readLimit bounds one response body by what it can be: nothing verify
// reads is larger than an evidence document, and a manifest is far
// smaller. The client's own bound on a manifest is 100 MiB.
func readLimit(r *http.Request) int64 {
	if strings.Contains(r.URL.Path, "/manifests/") {
		return maxManifest
	}
	return maxEvidence
}

// newTransport wraps base (a clone of http.DefaultTransport when nil, with
// a response header timeout) so that every request, the registry's
// authentication handshake included, is held to the read timeout and to
// readLimit.
func newTransport(base http.RoundTripper, readTimeout time.Duration) *boundedTransport {
	if base == nil {
		t := &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
		if dt, ok := http.DefaultTransport.(*http.Transport); ok {
			t = dt.Clone()
		}
		t.ResponseHeaderTimeout = readTimeout
		t.TLSHandshakeTimeout = readTimeout
		t.DialContext = (&net.Dialer{Timeout: readTimeout, KeepAlive: 30 * time.Second}).DialContext
		return &boundedTransport{base: t, readTimeout: readTimeout, owned: true}
	}
	return &boundedTransport{base: base, readTimeout: readTimeout}
}

type boundedTransport struct {
	base        http.RoundTripper
	readTimeout time.Duration
	// owned is set when base was made here, and its idle connections
	// are the transport's to close.
	owned bool
}

// release closes the idle connections of a base made here: each Verify
// has its own, which would otherwise linger until the idle timeout.
func (t *boundedTransport) release() {
	if t.owned {
		t.base.(*http.Transport).CloseIdleConnections()
	}
}

// RoundTrip runs the request under a context of its own, which the watch
// cancels when the registry stalls: cancelling is what unblocks a read
// waiting on the network, whatever the base transport is.
func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	w := &watch{host: req.URL.Host, path: req.URL.Path, timeout: t.readTimeout, cancel: cancel}
	w.mu.Lock()
	w.timer = time.AfterFunc(t.readTimeout, w.fire)
	w.mu.Unlock()
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		stalled := w.finish()
		cancel()
		if stalled != nil {
			return nil, stalled
		}
		// The base transport's own timeouts (dial, TLS, headers) race the
		// watch; either way the error names the registry. The cause is
		// kept as text: wrapped, the registry client would retry it. A
		// request whose own context ended is the caller's deadline, not
		// this one.
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && req.Context().Err() == nil {
			return nil, fmt.Errorf("registry %s: no response to %s within the read timeout of %s: %w (%v)", w.host, w.path, w.timeout, ErrTimeout, err)
		}
		return nil, err
	}
	w.startBody()
	resp.Body = &watchedBody{rc: resp.Body, w: w, limit: readLimit(req)}
	return resp, nil
}

// watch cancels one request whose response does not start within the read
// timeout, or whose body brings less than MinProgress in one.
type watch struct {
	host, path string
	timeout    time.Duration
	cancel     context.CancelFunc

	mu      sync.Mutex
	timer   *time.Timer
	inBody  bool
	got     int64
	done    bool
	stalled error
}

func (w *watch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	if w.inBody && w.got >= MinProgress {
		w.got = 0
		w.timer.Reset(w.timeout)
		return
	}
	if w.inBody {
		w.stalled = fmt.Errorf("registry %s stalled: %s brought fewer than %d bytes in the read timeout of %s: %w", w.host, w.path, MinProgress, w.timeout, ErrTimeout)
	} else {
		w.stalled = fmt.Errorf("registry %s: no response to %s within the read timeout of %s: %w", w.host, w.path, w.timeout, ErrTimeout)
	}
	w.done = true
	w.cancel()
}

// startBody restarts the clock for the body: the headers took part of the
// first period.
func (w *watch) startBody() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.inBody = true
		w.timer.Reset(w.timeout)
	}
}

func (w *watch) add(n int) {
	w.mu.Lock()
	w.got += int64(n)
	w.mu.Unlock()
}

// finish stops the clock and returns the stall, if the watch saw one.
func (w *watch) finish() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	w.timer.Stop()
	return w.stalled
}

// watchedBody counts what arrives for the watch and refuses more than
// limit bytes.
type watchedBody struct {
	rc    io.ReadCloser
	w     *watch
	limit int64
	read  int64
}

func (b *watchedBody) Read(p []byte) (int, error) {
	if b.read > b.limit {
		return 0, b.tooLarge()
	}
	if rest := b.limit + 1 - b.read; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := b.rc.Read(p)
	b.read += int64(n)
	b.w.add(n)
	if b.read > b.limit {
		return n - int(b.read-b.limit), b.tooLarge()
	}
	if err != nil {
		if stalled := b.w.finish(); stalled != nil && err != io.EOF {
			err = stalled
		}
	}
	return n, err
}

func (b *watchedBody) tooLarge() error {
	b.w.finish()
	return fmt.Errorf("registry %s: %s is larger than %d bytes", b.w.host, b.w.path, b.limit)
}

func (b *watchedBody) Close() error {
	b.w.finish()
	err := b.rc.Close()
	b.w.cancel()
	return err
}
