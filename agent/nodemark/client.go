package nodemark

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// maxNode bounds the node object read: a node lists its images and
// volumes, which a busy one has many of, but not megabytes.
const maxNode = 4 << 20

// conflictRetries is how many times a patch refused for a node changed
// since it was read (409) is made again from a fresh read.
const conflictRetries = 3

func (m *marker) Mark(ctx context.Context, failing []string) error {
	if err := m.mark(ctx, failing); err != nil {
		return fmt.Errorf("patching node %q: %w", m.node, err)
	}
	return nil
}

func (m *marker) mark(ctx context.Context, failing []string) error {
	token, pool, err := m.credentials()
	if err != nil {
		return err
	}
	// No proxy: the service address is the cluster's own, and a proxy set
	// for the node's egress has no business seeing the token.
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13},
		TLSHandshakeTimeout: m.timeout,
	}
	defer tr.CloseIdleConnections()
	c := &apiClient{http: &http.Client{Transport: tr, Timeout: m.timeout, CheckRedirect: refuseRedirect}, token: token}
	for attempt := 0; ; attempt++ {
		var n nodeObject
		if err := c.do(ctx, http.MethodGet, m.url, "", nil, &n); err != nil {
			return err
		}
		patch := m.patch(n, failing)
		if patch == nil {
			return nil
		}
		body, err := json.Marshal(patch)
		if err != nil {
			return err
		}
		err = c.do(ctx, http.MethodPatch, m.url+"?fieldManager=gpuhost-agent", "application/strategic-merge-patch+json", body, nil)
		var se *StatusError
		if errors.As(err, &se) && se.Code == http.StatusConflict && attempt < conflictRetries {
			continue
		}
		return err
	}
}

// refuseRedirect keeps the client from following a redirect: the API
// server never answers a node's GET or PATCH with one, and following it
// would send the token where the answer points, plain HTTP included (Go
// keeps the Authorization header on a redirect to the same host).
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	return fmt.Errorf("the API server redirected to %s; the agent follows no redirect with its token", req.URL.Redacted())
}

// apiClient sends requests with the service account's token.
type apiClient struct {
	http  *http.Client
	token string
}

// do sends one request and decodes a 200 answer into out when it is not
// nil; any other answer is a *StatusError.
func (c *apiClient) do(ctx context.Context, method, url, contentType string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxNode))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		se := &StatusError{Code: resp.StatusCode}
		var st struct{ Reason, Message string }
		if json.Unmarshal(answer, &st) == nil {
			se.Reason, se.Message = st.Reason, st.Message
		}
		return se
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("reading the node: %w", err)
	}
	return nil
}
