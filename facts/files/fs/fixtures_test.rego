# A compliant files document and the default params the checks' tests share.
package gpuhost.fs.fixtures_test

bf(path, type, uid, gid, mode) := {"path": path, "pattern": path, "directory": false, "type": type, "uid": uid, "gid": gid, "mode": mode}

dir(path, mode) := {"path": path, "pattern": path, "directory": true, "type": "directory", "uid": 0, "gid": 0, "mode": mode}

benchmark := [
	bf("/etc/passwd", "regular", 0, 0, "0644"),
	bf("/etc/shadow", "regular", 0, 42, "0000"),
	dir("/etc/cron.d", "0700"),
	{"path": "/etc/ssh/ssh_host_ed25519_key", "pattern": "/etc/ssh/*_key", "directory": false, "type": "regular", "uid": 0, "gid": 0, "mode": "0600"},
	{"path": "/etc/ssh/ssh_host_ed25519_key.pub", "pattern": "/etc/ssh/*.pub", "directory": false, "type": "regular", "uid": 0, "gid": 0, "mode": "0644"},
]

params := {
	"files_owner": {"/etc/passwd": 0, "/etc/shadow": 0, "/etc/cron.d": 0},
	"files_group": {"/etc/passwd": 0, "/etc/shadow": 42, "/etc/cron.d": 0},
	"files_mode": {"/etc/passwd": "0644", "/etc/shadow": "0000", "/etc/cron.d": "0700"},
}

tree_walk := {
	"complete": true, "entries": 100, "limit": 5000000, "unread": [], "skipped": [],
	"world_writable_dirs": {"count": 0, "paths": []},
	"world_writable_files": {"count": 0, "paths": []},
	"owners": [{"uid": 0, "count": 90, "paths": ["/etc/passwd"]}, {"uid": 1000, "count": 10, "paths": ["/home/alice/.bashrc"]}],
}

homes := [
	{"user": "alice", "uid": 1000, "gid": 1000, "path": "/home/alice", "type": "directory", "is_dir": true, "mode": "0750"},
	{"user": "nobody", "uid": 65534, "gid": 65534, "path": "/nonexistent", "type": "missing", "is_dir": false},
]

dot_files := [{"path": "/home/alice/.bashrc", "home": "/home/alice", "type": "regular", "uid": 1000, "gid": 1000}]

good := {
	"benchmark": benchmark,
	"patterns": ["/etc/passwd", "/etc/shadow", "/etc/cron.d", "/etc/ssh/*_key", "/etc/ssh/*.pub"],
	"homes": homes, "dot_files": dot_files, "trust_files": [], "walk": tree_walk,
}

users := [{"name": "root", "uid": 0, "gid": 0}, {"name": "alice", "uid": 1000, "gid": 1000}]

# with_files is the good document with files' keys replaced by those of
# patch.
with_files(patch) := {"files": object.union(good, patch), "access": {"users": users}}
