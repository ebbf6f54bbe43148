package gpuhost.drift.ngc_images_test

import data.gpuhost.drift.ngc_images as check

manifest := {"schema": "gpuhost.manifest/v1", "pins": {"ngc_images": [
	{"ref": "nvcr.io/nvidia/pytorch:24.01-py3", "digest": "sha256:aaa"},
	{"ref": "nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04", "digest": "sha256:bbb"},
]}}

img(ref, digest) := {"ref": ref, "digest": digest, "source": "/var/lib/containerd"}

test_pass_all_seeded if {
	f := {"target": {"kind": "image"}, "manifest": manifest, "containers": {"images": [
		img("nvcr.io/nvidia/pytorch:24.01-py3", "sha256:aaa"),
		img("nvcr.io/nvidia/cuda@sha256:bbb", "sha256:bbb"),
	]}}
	check.deny == set() with input as f
	check.skip == set() with input as f
}

test_fail_missing_and_moved if {
	f := {"target": {"kind": "host"}, "manifest": manifest, "containers": {"images": [img("nvcr.io/nvidia/pytorch:24.01-py3", "sha256:ccc")]}}
	check.deny == {
		"nvcr.io/nvidia/pytorch:24.01-py3 is at sha256:ccc; the baseline pins sha256:aaa",
		"pinned base nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04 (sha256:bbb) is not pre-seeded",
	} with input as f
}

test_skip_none_pinned if {
	f := {"target": {"kind": "host"}, "manifest": {"schema": "gpuhost.manifest/v1", "pins": {"ngc_images": []}}, "containers": {"images": []}}
	check.skip == {"the baseline pins no NGC images"} with input as f
}

test_skip_no_container_facts if {
	f := {"target": {"kind": "host"}, "manifest": manifest}
	check.skip == {"no container image facts were collected"} with input as f
	check.deny == set() with input as f
}
