# METADATA
# title: The node passes GPU validation (driver, container, CUDA, fabric, MIG)
# description: >-
#   The agent's gpu_validation collector (gpuhost agent --gpu-validate) holds the node to the
#   sequence gpu-operator's validator runs before a node takes GPU work, and gpuhost validate runs
#   the same steps by hand: the kernel module is loaded and libnvidia-ml's driver version is its
#   own; a container started through containerd with the CDI device nvidia.com/gpu=all lists every
#   GPU NVML lists; the CUDA sample vectorAdd passes on each GPU; on NVSwitch systems the fabric
#   manager runs, the board's NVSwitches are on the PCI bus and each GPU's fabric registration
#   completed; and every GPU's MIG mode is the one params.gpu_mig wants. A step that failed fails
#   this check, naming the GPU where the step judged GPUs one by one. A step the node needed that
#   could not run (no container runtime, no vectorAdd in the image, a state nobody could read) is an
#   error, never a pass, unless another step failed. Skips when the collector did not run: the
#   validation runs a container and CUDA on every GPU, so the agent runs it only when asked.
# scope: package
# custom:
#   id: GH-GPU-022
#   severity: high
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Run "gpuhost validate" on the node for each step's reason: match libnvidia-ml to the loaded
#     module (or reboot into it), regenerate the CDI spec with "nvidia-ctk cdi generate", start
#     nvidia-fabricmanager and wait for the fabric, set the MIG mode and reset the GPU; drain the
#     node until it passes.
#   controls:
#     nist-800-53: [SI-6, CM-8]
#   targets: [host, facts]
#   requires: [gpu_validation]
package gpuhost.gpu.validation

steps := object.get(input, ["gpu", "validation", "steps"], [])

error contains "the gpu_validation collector recorded no validation" if {
	not input.gpu.validation
}

# A failed step is the verdict: the steps it kept from running prove nothing
# more, so they are errors only where no step failed.
error contains sprintf("step %s did not run, and the node needs it: %s", [s.name, s.reason]) if {
	not any_failed
	some s in steps
	s.status == "not_run"
	s.required == true
}

any_failed if {
	some s in steps
	s.status == "failed"
}

# A step that judged GPUs one by one names each GPU that failed it.
deny contains {"msg": msg, "subject": g.uuid} if {
	some s in steps
	s.status == "failed"
	some g in object.get(s, "gpus", [])
	g.status == "failed"
	msg := sprintf("step %s: GPU %d (%s): %s", [s.name, g.index, g.uuid, g.detail])
}

deny contains msg if {
	some s in steps
	s.status == "failed"
	not failed_gpu(s)
	msg := sprintf("step %s failed: %s", [s.name, s.reason])
}

failed_gpu(s) if {
	some g in s.gpus
	g.status == "failed"
}
