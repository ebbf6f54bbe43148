package gpuhost.sc.ngc_bases_test

import data.gpuhost.sc.ngc_bases as check

params := {"allowed_registries": ["nvcr.io"]}

d1 := concat("", ["sha256:", crypto.sha256("one")])

d2 := concat("", ["sha256:", crypto.sha256("two")])

img(ref, digest) := {"ref": ref, "digest": digest, "source": "/var/lib/gpuhost/images"}

pin(ref, digest) := {"ref": ref, "digest": digest}

test_pass_pinned_from_nvcr if {
	f := {
		"target": {"kind": "image"},
		"containers": {"images": [img("nvcr.io/nvidia/pytorch:24.01-py3", d1), img("NVCR.IO/nvidia/cuda:12.2.0-base-ubuntu22.04", d2)]},
		"manifest": {"pins": {"ngc_images": [pin("nvcr.io/nvidia/pytorch:24.01-py3", d1), pin("nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04", d2)]}},
	}
	check.deny == set() with input as f with data.gpuhost.params as params
	check.skip == set() with input as f with data.gpuhost.params as params
}

test_pass_without_manifest if {
	f := {"target": {"kind": "rootfs"}, "containers": {"images": [img("nvcr.io/nvidia/cuda@sha256:abc", d1)]}}
	check.deny == set() with input as f with data.gpuhost.params as params
}

test_fail_registry_unpinned_and_nameless if {
	f := {
		"target": {"kind": "image"},
		"containers": {"images": [
			img("docker.io/library/ubuntu:22.04", d1),
			img("pytorch/pytorch:latest", d2),
			img("", d2),
		]},
		"manifest": {"pins": {"ngc_images": [pin("nvcr.io/nvidia/pytorch:24.01-py3", "latest"), pin("localhost:5000/cuda:12", d1)]}},
	}
	check.deny == {
		"docker.io/library/ubuntu:22.04 comes from docker.io, which is not an allowed registry (nvcr.io)",
		"pytorch/pytorch:latest comes from docker.io, which is not an allowed registry (nvcr.io)",
		"localhost:5000/cuda:12 comes from localhost:5000, which is not an allowed registry (nvcr.io)",
		sprintf("seeded image %s has no reference, so its registry cannot be checked", [d2]),
		"the manifest pins nvcr.io/nvidia/pytorch:24.01-py3 without a sha256 digest",
		sprintf("seeded image pytorch/pytorch:latest (%s) is not pinned by digest in the manifest", [d2]),
		sprintf("seeded image  (%s) is not pinned by digest in the manifest", [d2]),
	} with input as f with data.gpuhost.params as params
}

test_allowed_registries_is_a_param if {
	f := {"target": {"kind": "image"}, "containers": {"images": [img("registry.example.com/nvidia/cuda:12", d1)]}}
	check.deny == set() with input as f with data.gpuhost.params as {"allowed_registries": ["nvcr.io", "Registry.Example.com"]}
}

test_skip_nothing_seeded if {
	f := {"target": {"kind": "image"}, "containers": {"images": []}, "manifest": {"pins": {}}}
	check.skip == {"no NGC base is seeded or pinned"} with input as f with data.gpuhost.params as params
}

test_fail_localhost_is_a_registry if {
	f := {"target": {"kind": "image"}, "containers": {"images": [img("localhost/nvidia/cuda:12", d1)]}}
	check.deny == {"localhost/nvidia/cuda:12 comes from localhost, which is not an allowed registry (nvcr.io)"} with input as f with data.gpuhost.params as params
}

test_fail_damaged_image if {
	f := {
		"target": {"kind": "image"},
		"containers": {"images": [], "damaged": [{"ref": "nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04", "digest": d1, "reason": "blob sha256:00 does not hash to its digest"}]},
	}
	check.deny == {sprintf("seeded image nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04 (%s) is damaged: blob sha256:00 does not hash to its digest", [d1])} with input as f with data.gpuhost.params as params
	check.skip == set() with input as f with data.gpuhost.params as params
}
