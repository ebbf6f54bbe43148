# METADATA
# title: Docker uses the systemd cgroup driver
# description: >-
#   When Docker is configured (/etc/docker/daemon.json), its cgroup driver must be systemd
#   (exec-opts native.cgroupdriver=systemd). An unset driver passes only where the cgroup
#   collector saw cgroup v2, on which dockerd defaults to systemd; otherwise it means cgroupfs.
#   Skips when Docker is not configured.
# scope: package
# custom:
#   id: GH-RT-004
#   severity: medium
#   location: /etc/docker/daemon.json
#   remediation: >-
#     Add "exec-opts" ["native.cgroupdriver=systemd"] to /etc/docker/daemon.json and restart docker.
#   controls:
#     nist-800-53: [CM-2, CM-6]
#   targets: [rootfs, image, host, facts]
#   requires: [container_runtime]
package gpuhost.runtime.docker_systemd_cgroup

import data.gpuhost.lib.locate

docker := object.get(input.container_runtime, "docker", null)

driver := lower(object.get(docker, "cgroup_driver", "")) if docker != null

skip contains "docker is not configured" if docker == null

ok if driver == "systemd"

ok if {
	driver == ""
	input.cgroup.version == 2
}

deny contains finding if {
	driver != ""
	not ok
	msg := sprintf("docker (%s) uses the %s cgroup driver; want systemd", [docker.config_path, driver])
	finding := at_driver(msg)
}

deny contains msg if {
	driver == ""
	not ok
	msg := sprintf("docker (%s) sets no cgroup driver and cgroup v2 is not known to be in use, so dockerd uses cgroupfs; want systemd", [docker.config_path])
}

# at_driver places msg on the exec-opts entry of daemon.json that names the
# driver, when the facts know its line.
at_driver(msg) := locate.at(msg, l.file, l.line) if {
	l := docker.locations.cgroup_driver
} else := msg
