// Package seed pulls container base images by digest into an OCI image
// layout on local disk, verifying every byte, so that the gpuhost-gpu
// provisioner can pre-seed them into an image and the gpuhost-ngc data source
// can pin tags to digests.
//
// Blobs stream straight to disk through a sha256 hasher and are renamed into
// place only once their size and digest match, so a file under blobs/sha256
// is always complete and verified: a later pull skips it, and a failed
// download never leaves something that looks whole.
package seed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// DefaultAllowed are the registries an image reference may name when the
// configuration names none.
var DefaultAllowed = []string{"nvcr.io"}

// APIKeyEnv is the environment variable that holds the NGC API key. NGC
// takes it as the password of the literal user Username.
const (
	APIKeyEnv = "NGC_API_KEY"
	Username  = "$oauthtoken"
)

// DefaultPlatform is the platform taken from a multi-platform index.
const DefaultPlatform = "linux/amd64"

// Options say where and how images are fetched.
type Options struct {
	// Registry, when set, is the host[:port] bytes are fetched from instead
	// of the registry a reference names: a mirror. References keep their
	// own names everywhere else; the pinned digest makes the content the
	// same wherever it comes from.
	Registry string
	// Allowed lists the registries references may name; nil means
	// DefaultAllowed.
	Allowed []string
	// Auth authenticates to the registry; nil means AuthFromEnv.
	Auth authn.Authenticator
	// Transport is the base HTTP transport; nil means remote.DefaultTransport.
	Transport http.RoundTripper
	// Platform is the os/arch[/variant] taken from a multi-platform index;
	// empty means DefaultPlatform.
	Platform string
	// Retries is how many times a failed blob download is tried again;
	// 0 means 4, a negative value means none.
	Retries int
	// Backoff is the wait before the first retry, doubled each time up to
	// 30 s; 0 means 1 s.
	Backoff time.Duration
	// Progress, when set, is told how each blob is going: at most every
	// ProgressEvery bytes and once when the blob is complete.
	Progress func(Progress)
	// Track, when set, may wrap each blob's response body as it streams,
	// from byte done of total: Packer's UI draws its progress bar this way.
	// It must return a reader of the same bytes.
	Track func(ref, digest string, done, total int64, body io.ReadCloser) io.ReadCloser
}

// Progress reports one blob's download.
type Progress struct {
	Ref    string
	Digest string
	Done   int64
	Total  int64
	// Cached is true when the blob was already in the layout.
	Cached   bool
	Complete bool
}

// ProgressEvery is how many bytes pass between two progress reports of one
// blob.
const ProgressEvery = 256 << 20

// AuthFromEnv returns NGC's credentials when NGC_API_KEY is set, else
// anonymous access (public NGC images need none).
func AuthFromEnv() authn.Authenticator {
	key := os.Getenv(APIKeyEnv)
	if key == "" {
		return authn.Anonymous
	}
	return authn.FromConfig(authn.AuthConfig{Username: Username, Password: key})
}

var (
	digestRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	// hostRe is what the first component of a reference must look like to
	// be a registry rather than a Docker Hub namespace.
	hostRe = regexp.MustCompile(`^([a-z0-9-]+(\.[a-z0-9-]+)+|localhost|\[[0-9a-f:]+\])(:[0-9]+)?$`)
)

// target is a parsed reference: what it is called and where it is fetched.
type target struct {
	ref    string
	repo   name.Repository
	tag    string
	digest string
}

// parseRef splits ref into registry, repository, tag and digest, checks the
// registry against the allowed list, and points the repository at the
// mirror when one is configured.
func parseRef(ref string, o *Options) (target, error) {
	t := target{ref: ref}
	rest, dgst, hasDigest := strings.Cut(ref, "@")
	if hasDigest {
		if !digestRe.MatchString(dgst) {
			return t, fmt.Errorf("image %s: %q is not a sha256 digest", ref, dgst)
		}
		t.digest = dgst
	}
	host, repoPath, ok := strings.Cut(rest, "/")
	if !ok || !hostRe.MatchString(host) {
		return t, fmt.Errorf("image %s: the reference must start with a registry host, such as nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", ref)
	}
	if i := strings.LastIndex(repoPath, ":"); i >= 0 {
		t.tag = repoPath[i+1:]
		repoPath = repoPath[:i]
	}
	allowed := o.Allowed
	if allowed == nil {
		allowed = DefaultAllowed
	}
	if !slices.Contains(allowed, host) {
		return t, fmt.Errorf("image %s: registry %s is not allowed (allowed: %s)", ref, host, strings.Join(allowed, ", "))
	}
	fetchHost := host
	if o.Registry != "" {
		fetchHost = o.Registry
	}
	repo, err := name.NewRepository(fetchHost+"/"+repoPath, name.StrictValidation)
	if err != nil {
		return t, fmt.Errorf("image %s: %w", ref, err)
	}
	if t.tag != "" {
		if _, err := name.NewTag(repo.Name()+":"+t.tag, name.StrictValidation); err != nil {
			return t, fmt.Errorf("image %s: %w", ref, err)
		}
	}
	t.repo = repo
	return t, nil
}

// Resolved is what a tag points at.
type Resolved struct {
	// Ref is the reference as given.
	Ref string
	// Digest is the manifest digest, sha256:<hex>.
	Digest string
	// MediaType is the manifest's media type (an index for multi-platform
	// images).
	MediaType string
	// Size is the manifest's size in bytes.
	Size int64
}

// Resolve asks the registry which manifest digest ref points at now, with a
// HEAD request where the registry answers one and a GET where it does not.
// A reference that already carries a digest is resolved all the same, which
// checks that the registry still serves it.
func Resolve(ctx context.Context, ref string, o Options) (Resolved, error) {
	t, err := parseRef(ref, &o)
	if err != nil {
		return Resolved{}, err
	}
	var r name.Reference
	switch {
	case t.digest != "":
		r = t.repo.Digest(t.digest)
	case t.tag != "":
		r = t.repo.Tag(t.tag)
	default:
		return Resolved{}, fmt.Errorf("image %s: name a tag or a digest", ref)
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuth(o.auth())}
	if o.Transport != nil {
		opts = append(opts, remote.WithTransport(o.Transport))
	}
	desc, err := remote.Head(r, opts...)
	if err != nil {
		var gerr error
		var got *remote.Descriptor
		if got, gerr = remote.Get(r, opts...); gerr != nil {
			return Resolved{}, fmt.Errorf("resolving image %s: %w", ref, errors.Join(err, gerr))
		}
		desc = &v1.Descriptor{Digest: got.Digest, MediaType: got.MediaType, Size: got.Size}
	}
	if !digestRe.MatchString(desc.Digest.String()) {
		return Resolved{}, fmt.Errorf("resolving image %s: the registry gave digest %q, not sha256", ref, desc.Digest)
	}
	if t.digest != "" && desc.Digest.String() != t.digest {
		return Resolved{}, &MismatchError{Ref: ref, Pinned: t.digest, Got: desc.Digest.String()}
	}
	return Resolved{Ref: ref, Digest: desc.Digest.String(), MediaType: string(desc.MediaType), Size: desc.Size}, nil
}

func (o *Options) auth() authn.Authenticator {
	if o.Auth != nil {
		return o.Auth
	}
	return AuthFromEnv()
}

// MismatchError says the registry served other content than the pin.
type MismatchError struct {
	Ref    string
	Pinned string
	Got    string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("image %s: digest mismatch: pinned %s, the registry served %s", e.Ref, e.Pinned, e.Got)
}

// Repository returns ref without its tag and digest:
// nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04 gives nvcr.io/nvidia/cuda.
func Repository(ref string) string {
	rest, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		rest = rest[:i]
	}
	return rest
}
