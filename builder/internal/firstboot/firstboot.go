// Package firstboot holds the units that give each host booted from one
// image its own identity. The rootfs builder's disk output and the
// gpuhost-gpu provisioner's hardening both install them, under one name, so
// whichever writes last writes the same file.
package firstboot

// SSHHostKeysUnitName is the unit's file name under /etc/systemd/system.
const SSHHostKeysUnitName = "gpuhost-ssh-hostkeys.service"

// SSHHostKeysUnit makes the host keys the image was built without, before
// sshd starts. Debian's ssh.service refuses to start with none, and
// ssh-keygen -A makes only the missing ones, so a host whose keys were
// provided keeps them.
const SSHHostKeysUnit = `# Written by gpuhost: the image carries no SSH host keys, which every host
# booted from it would share; each host makes its own.
[Unit]
Description=Generate this host's SSH host keys
Documentation=man:ssh-keygen(1)
Before=ssh.service
ConditionPathExistsGlob=!/etc/ssh/ssh_host_*_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
WantedBy=ssh.service
`
