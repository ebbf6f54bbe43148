package gpu

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// NVIDIA's own repositories: the defaults of Repositories.
const (
	DefaultCUDARepositories  = "https://developer.download.nvidia.com/compute/cuda/repos"
	DefaultToolkitRepository = "https://nvidia.github.io/libnvidia-container/stable/deb"
	DefaultToolkitKey        = "https://nvidia.github.io/libnvidia-container/gpgkey"
)

// repoURLRe is a URL the plan may put between single quotes and into an
// apt source line: a scheme, a host, an optional port and a plain path.
var repoURLRe = regexp.MustCompile(`^https?://([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\])(:[0-9]{1,5})?(/[A-Za-z0-9._~+-]+)*/?$`)

func (r *Repositories) defaults() {
	if r.CUDA == "" {
		r.CUDA = DefaultCUDARepositories
	}
	if r.ContainerToolkit == "" {
		r.ContainerToolkit = DefaultToolkitRepository
	}
	if r.ContainerToolkitKey == "" {
		r.ContainerToolkitKey = DefaultToolkitKey
	}
	// The plan appends paths to the repository directories.
	r.CUDA = strings.TrimRight(r.CUDA, "/")
	r.ContainerToolkit = strings.TrimRight(r.ContainerToolkit, "/")
}

func (r Repositories) validate() []string {
	var errs []string
	for _, f := range []struct{ field, v string }{
		{"repositories.cuda", r.CUDA},
		{"repositories.container_toolkit", r.ContainerToolkit},
		{"repositories.container_toolkit_key", r.ContainerToolkitKey},
	} {
		if msg := checkRepoURL(f.v); msg != "" {
			errs = append(errs, f.field+": "+msg)
		}
	}
	return errs
}

// checkRepoURL says what is wrong with a repository URL, or "". Plain http
// is allowed on loopback only: the digests and signatures would still hold
// over it, but a URL that leaves the machine in the clear tells whoever is
// on the path which driver an image gets, and curl is kept to https.
func checkRepoURL(v string) string {
	if !repoURLRe.MatchString(v) {
		return fmt.Sprintf("%q is not an http(s) URL of a host and a plain path (no user, query or fragment)", v)
	}
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Sprintf("%q: %v", v, err)
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return fmt.Sprintf("%q: plain http is allowed on loopback only (127.0.0.0/8, [::1], localhost); use https", v)
	}
	return ""
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
