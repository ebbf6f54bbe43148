package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

func TestParseKubeletConfig(t *testing.T) {
	k, err := ParseKubeletConfig("config.yaml", []byte(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
systemReserved:
  cpu: 500m
  memory: 2Gi
evictionHard:
  memory.available: 500Mi
  nodefs.available: 10%
enforceNodeAllocatable: [pods]
`))
	if err != nil {
		t.Fatal(err)
	}
	if k.CgroupDriver != "systemd" || k.SystemReservedMemory != "2Gi" || k.KubeReservedMemory != "" || k.EvictionHardMemory != "500Mi" || len(k.EnforceNodeAllocatable) != 1 {
		t.Errorf("kubelet %+v", k)
	}
	if _, err := ParseKubeletConfig("config.yaml", []byte("kind: Pod\n")); err == nil || !strings.Contains(err.Error(), "KubeletConfiguration") {
		t.Errorf("a Pod accepted as a kubelet config: %v", err)
	}
}

// TestKubeletDropIns: drop-ins in the kubelet's config dir are merged over
// its configuration in name order, a field a drop-in sets replacing the
// earlier value; a drop-in alone is a kubelet configuration too.
func TestKubeletDropIns(t *testing.T) {
	base := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: cgroupfs\nrotateCertificates: true\n"
	drop := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\nsystemReserved:\n  memory: 2Gi\nevictionHard:\n  memory.available: 500Mi\nenforceNodeAllocatable: [pods]\n"
	later := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nsystemReserved:\n  memory: 4Gi\n"
	for _, c := range []struct {
		name  string
		files map[string]any
		check func(t *testing.T, k *facts.Kubelet)
	}{
		{"merged", map[string]any{
			"var/lib/kubelet/config.yaml":                  base,
			"etc/kubernetes/kubelet.conf.d/50-memory.conf": drop,
			"etc/kubernetes/kubelet.conf.d/90-larger.conf": later,
			"etc/kubernetes/kubelet.conf.d/README":         "not a drop-in",
		}, func(t *testing.T, k *facts.Kubelet) {
			if k.CgroupDriver != "systemd" || k.SystemReservedMemory != "4Gi" || k.EvictionHardMemory != "500Mi" || !k.RotateCertificates {
				t.Errorf("kubelet %+v", k)
			}
			if strings.Count(k.ConfigPath, ",") != 2 {
				t.Errorf("config_path %q should name the three files", k.ConfigPath)
			}
		}},
		{"drop-in only", map[string]any{"etc/kubernetes/kubelet.conf.d/50-memory.conf": drop}, func(t *testing.T, k *facts.Kubelet) {
			if k.SystemReservedMemory != "2Gi" || k.RotateCertificates {
				t.Errorf("kubelet %+v", k)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			collecttest.WriteTree(t, dir, c.files)
			env := collecttest.NewEnv(t, dir, false)
			k, err := CollectKubelet(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, k)
		})
	}
}
