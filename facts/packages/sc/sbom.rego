# METADATA
# title: The image carries its SBOM
# description: >-
#   A baked image must carry a CycloneDX SBOM of itself at /var/lib/gpuhost/sbom.cdx.json
#   (written at bake time from the finished rootfs), listing at least one component, so that
#   every host can say what it was built from when the next CVE lands. The sbom collector
#   reads the file; an unreadable or non-CycloneDX file is an error there, never a pass here.
# scope: package
# custom:
#   id: GH-SC-003
#   severity: medium
#   location: /var/lib/gpuhost/sbom.cdx.json
#   remediation: >-
#     Write a CycloneDX SBOM of the finished rootfs to ROOTFS/var/lib/gpuhost/sbom.cdx.json
#     before packing ("trivy rootfs --format cyclonedx ROOTFS" makes one), then rebuild.
#   controls:
#     nist-800-53: [CM-8, SR-4]
#   targets: [rootfs, image, host, facts]
#   requires: [sbom]
package gpuhost.sc.sbom

skip contains "no SBOM facts were collected" if not input.sbom

deny contains msg if {
	input.sbom.present == false
	msg := sprintf("no SBOM at %s", [input.sbom.path])
}

deny contains msg if {
	input.sbom.present == true
	input.sbom.components == 0
	msg := sprintf("the SBOM at %s lists no components", [input.sbom.path])
}
