# METADATA
# title: The kubelet rotates its own certificates
# description: >-
#   A kubelet's client certificate (to the API server) and serving certificate (to whoever
#   scrapes or execs into pods) must renew themselves before they expire: rotateCertificates
#   true, and serverTLSBootstrap true so that the serving certificate is issued by the cluster
#   and rotated too, instead of a self-signed one that lives as long as the node. Read from the
#   kubelet's configuration file; not applicable where no kubelet is configured.
# scope: package
# custom:
#   id: GH-KEY-002
#   severity: medium
#   location: /var/lib/kubelet/config.yaml
#   remediation: >-
#     In /var/lib/kubelet/config.yaml set rotateCertificates: true and serverTLSBootstrap: true,
#     approve the node's serving CSRs (or run an approver), then restart the kubelet.
#   controls:
#     nist-800-53: [SC-12, IA-5(1)]
#     cis-kubernetes: ["4.2.11", "4.2.12"]
#   targets: [rootfs, image, host, facts]
#   requires: [kubelet]
package gpuhost.key.kubelet_rotation

k := input.kubelet

deny contains sprintf("%s does not set rotateCertificates: true: the kubelet's client certificate expires instead of renewing", [k.config_path]) if {
	not k.rotate_certificates
}

deny contains sprintf("%s does not set serverTLSBootstrap: true: the kubelet serves a self-signed certificate that is never rotated", [k.config_path]) if {
	not k.server_tls_bootstrap
}
