package deploy

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestRenderDaemonSetNeedsADigest(t *testing.T) {
	for _, image := range []string{
		"",
		"gpuhost-agent:latest",
		"registry.test/gpuhost/gpuhost-agent:v1",
		"registry.test/gpuhost/gpuhost-agent@sha256:short",
		"registry.test/gpuhost/gpuhost-agent@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n  evil: yes",
	} {
		var b bytes.Buffer
		err := RenderDaemonSet(&b, image)
		if err == nil || !strings.Contains(err.Error(), "not a reference by digest") {
			t.Errorf("%q: err = %v, want a refusal", image, err)
		}
		if b.Len() != 0 {
			t.Errorf("%q: wrote %d bytes on a refusal", image, b.Len())
		}
	}
}

// container is the DaemonSet's one container, rendered with testImage.
func container(t *testing.T) (spec, c any, docs map[string][]doc) {
	t.Helper()
	docs = loadYAML(t)
	spec = get(docs["DaemonSet"][0], "spec", "template", "spec")
	cs, _ := get(spec, "containers").([]any)
	if len(cs) != 1 {
		t.Fatalf("want one container, have %d", len(cs))
	}
	return spec, cs[0], docs
}

func TestDaemonSetRunsTheImageByDigest(t *testing.T) {
	_, c, _ := container(t)
	if get(c, "image") != testImage {
		t.Errorf("image = %v, want %s", get(c, "image"), testImage)
	}
	// The image's entrypoint is `gpuhost-agent agent`: the arguments are
	// the command's flags, not the command again.
	args, _ := get(c, "args").([]any)
	if len(args) == 0 || args[0] == "agent" {
		t.Errorf("args = %v: the entrypoint already names the agent command", args)
	}
}

func TestDaemonSetSeesGPUsAndNoMore(t *testing.T) {
	_, c, _ := container(t)
	env := map[string]any{}
	list, _ := get(c, "env").([]any)
	for _, e := range list {
		n, _ := get(e, "name").(string)
		env[n] = get(e, "value")
	}
	if env["NVIDIA_VISIBLE_DEVICES"] != "all" || env["NVIDIA_DRIVER_CAPABILITIES"] != "utility" {
		t.Errorf("env: NVIDIA_VISIBLE_DEVICES=%v NVIDIA_DRIVER_CAPABILITIES=%v, want all and utility", env["NVIDIA_VISIBLE_DEVICES"], env["NVIDIA_DRIVER_CAPABILITIES"])
	}
	if r := get(c, "resources", "limits", "nvidia.com/gpu"); r != nil {
		t.Errorf("the agent takes a GPU from the workloads: %v", r)
	}
	// The capabilities are exactly the ones the template says what for.
	add, _ := get(c, "securityContext", "capabilities", "add").([]any)
	want := []any{"DAC_READ_SEARCH", "SYS_PTRACE", "NET_ADMIN", "AUDIT_CONTROL"}
	if !slices.Equal(add, want) {
		t.Errorf("capabilities added: %v, want %v", add, want)
	}
	for _, cp := range want {
		if !strings.Contains(daemonSetTemplate, "#   "+cp.(string)+" ") {
			t.Errorf("the template does not say what %s is for", cp)
		}
	}
	mounts, _ := get(c, "volumeMounts").([]any)
	for _, m := range mounts {
		if get(m, "mountPath") != "/host" {
			continue
		}
		if get(m, "recursiveReadOnly") != "Enabled" || get(m, "mountPropagation") != "None" {
			t.Errorf("/host: recursiveReadOnly %v, mountPropagation %v; want Enabled and None (submounts stay writable otherwise)", get(m, "recursiveReadOnly"), get(m, "mountPropagation"))
		}
	}
}

// TestServiceMonitorTrustsTheDaemonSetsSecret: Prometheus verifies the agent
// with the CA from the secret the DaemonSet serves its certificate from, and
// the template tells the operator that secret must hold it.
func TestServiceMonitorTrustsTheDaemonSetsSecret(t *testing.T) {
	spec, _, docs := container(t)
	tlsSecret := ""
	vols, _ := get(spec, "volumes").([]any)
	for _, v := range vols {
		if get(v, "name") == "tls" {
			tlsSecret, _ = get(v, "secret", "secretName").(string)
		}
	}
	eps, _ := get(docs["ServiceMonitor"][0], "spec", "endpoints").([]any)
	ca := get(eps[0], "tlsConfig", "ca", "secret")
	if tlsSecret == "" || get(ca, "name") != tlsSecret {
		t.Errorf("ServiceMonitor CA secret %v, DaemonSet TLS secret %q", get(ca, "name"), tlsSecret)
	}
	key, _ := get(ca, "key").(string)
	if !strings.Contains(daemonSetTemplate, key) {
		t.Errorf("the DaemonSet does not document that %s holds %s", tlsSecret, key)
	}
	server, _ := get(eps[0], "tlsConfig", "serverName").(string)
	if !strings.Contains(daemonSetTemplate, server) {
		t.Errorf("the DaemonSet does not document that the certificate must name %s", server)
	}
}
