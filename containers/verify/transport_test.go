package verify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// get reads path from a server that answers with h, through the bounded
// transport, to the end.
func get(t *testing.T, h http.Handler, path string, readTimeout time.Duration) error {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := &http.Client{Transport: newTransport(nil, readTimeout)}
	resp, err := c.Get(srv.URL + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// TestTransportSizeLimits: a manifest of maxManifest bytes and a blob of
// maxEvidence are read; a byte more is refused.
func TestTransportSizeLimits(t *testing.T) {
	sized := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Write(bytes.Repeat([]byte("x"), n))
	})
	for _, tc := range []struct {
		path  string
		limit int
	}{
		{"/v2/gpu/img/manifests/sha256:x", maxManifest},
		{"/v2/gpu/img/blobs/sha256:x", maxEvidence},
	} {
		if err := get(t, sized, fmt.Sprintf("%s?n=%d", tc.path, tc.limit), time.Minute); err != nil {
			t.Errorf("%s of %d bytes: %v", tc.path, tc.limit, err)
		}
		err := get(t, sized, fmt.Sprintf("%s?n=%d", tc.path, tc.limit+1), time.Minute)
		if want := fmt.Sprintf("is larger than %d bytes", tc.limit); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s of %d bytes: err = %v, want %q", tc.path, tc.limit+1, err, want)
		}
	}
}

// TestTransportProgress: a body that brings MinProgress bytes every half
// read timeout is read to its end; one that brings a quarter of that is
// cut, naming the registry.
func TestTransportProgress(t *testing.T) {
	const readTimeout = 500 * time.Millisecond
	// Chunks come every quarter of the timeout, so a window holds three or
	// four of them and a late wake-up on a loaded machine still leaves
	// the floor met; below it, even four chunks fall short.
	chunks := func(size int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for range 12 {
				w.Write(bytes.Repeat([]byte("x"), size))
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(readTimeout / 4):
				}
			}
		})
	}
	if err := get(t, chunks(MinProgress), "/v2/gpu/img/blobs/sha256:x", readTimeout); err != nil {
		t.Errorf("at the floor: %v", err)
	}
	err := get(t, chunks(MinProgress/5), "/v2/gpu/img/blobs/sha256:x", readTimeout)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "stalled: /v2/gpu/img/blobs/sha256:x brought fewer than 65536 bytes in the read timeout of 500ms") {
		t.Errorf("below the floor: err = %v", err)
	}
}
