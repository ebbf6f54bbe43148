package gpuhost.audit.fixtures_test

rule(kind, fields) := object.union({"kind": kind, "syscalls": [], "fields": [], "text": "", "list": "", "action": "", "arch": "", "path": "", "perms": ""}, fields)

exec(arch, f) := rule("syscall", {"list": "exit", "action": "always", "arch": arch, "syscalls": ["execve"], "fields": [f]})

hardened := [
	exec("b64", {"name": "euid", "op": "=", "value": "0"}),
	exec("b32", {"name": "euid", "op": "=", "value": "0"}),
	exec("b64", {"name": "auid", "op": ">=", "value": "1000"}),
	exec("b32", {"name": "auid", "op": ">=", "value": "1000"}),
	rule("watch", {"path": "/etc/sudoers", "perms": "aw"}),
	rule("watch", {"path": "/etc/sudoers.d/", "perms": "aw"}),
	rule("watch", {"path": "/etc/ssh", "perms": "aw"}),
	rule("syscall", {"list": "exit", "action": "always", "path": "/etc/gpuhost", "perms": "aw"}),
	rule("watch", {"path": "/usr/bin/nvidia-smi", "perms": "x"}),
]

params := {"audit_watch_paths": ["/etc/sudoers", "/etc/sudoers.d", "/etc/ssh", "/etc/ssh/sshd_config.d", "/etc/gpuhost"], "audit_gpu_tools": ["/usr/bin/nvidia-smi"]}
