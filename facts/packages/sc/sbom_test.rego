package gpuhost.sc.sbom_test

import data.gpuhost.sc.sbom as check

sbom(present, components) := {"present": present, "path": "/var/lib/gpuhost/sbom.cdx.json", "format": "CycloneDX", "spec_version": "1.6", "components": components}

test_pass_present if {
	f := {"target": {"kind": "image"}, "sbom": sbom(true, 412)}
	check.deny == set() with input as f
	check.skip == set() with input as f
}

test_fail_absent if {
	f := {"target": {"kind": "image"}, "sbom": {"present": false, "path": "/var/lib/gpuhost/sbom.cdx.json", "components": 0}}
	check.deny == {"no SBOM at /var/lib/gpuhost/sbom.cdx.json"} with input as f
}

test_fail_empty if {
	f := {"target": {"kind": "rootfs"}, "sbom": sbom(true, 0)}
	check.deny == {"the SBOM at /var/lib/gpuhost/sbom.cdx.json lists no components"} with input as f
}

test_skip_no_facts if {
	f := {"target": {"kind": "facts"}}
	check.skip == {"no SBOM facts were collected"} with input as f
	check.deny == set() with input as f
}
