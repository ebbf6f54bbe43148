package facts

import "github.com/gpuhost/gpuhost/facts/collect"

// Audit is the Linux audit trail: auditd, the rules its files load, the
// rules the kernel holds on a live host, and where the log goes.
type Audit struct {
	// Installed says whether auditd's binary is in the target.
	Installed bool `json:"installed"`
	// Enabled says whether auditd.service is wanted by a target.
	Enabled bool `json:"enabled"`
	// Active is auditd.service's ActiveState on a live host.
	Active string `json:"active,omitempty"`
	// RulesFiles are the files the rules come from: rules.d/*.rules in
	// name order, as augenrules joins them, or audit.rules without them.
	RulesFiles []string    `json:"rules_files"`
	Rules      []AuditRule `json:"rules"`
	// Kernel is what the kernel holds, on a live host only.
	Kernel *AuditKernel `json:"kernel,omitempty"`
	Config AuditdConfig `json:"config"`
	Remote AuditRemote  `json:"remote"`
}

// AuditKernel is the rules the kernel holds beside those the files load:
// Error says why they could not be read (then nothing else is set);
// Unloaded are file rules the kernel lacks, Unexpected kernel rules no file
// has, NotCompared the rules either side names in a way that cannot be
// matched (a system call known only by number).
type AuditKernel struct {
	Error       string      `json:"error,omitempty"`
	Rules       []AuditRule `json:"rules"`
	Unloaded    []AuditRule `json:"unloaded"`
	Unexpected  []AuditRule `json:"unexpected"`
	NotCompared int         `json:"not_compared" jsonschema:"minimum=0"`
}

// AuditRule is one auditctl line. Kind is "watch" (-w), "syscall" (-a or
// -A), "delete", "delete_watch" or "control" (-D, -b, -e, ...). Path is
// the watched path or the path=/dir= field, Perms its sorted permission
// letters; Syscalls are sorted.
type AuditRule struct {
	File     string       `json:"file,omitempty"`
	Line     int          `json:"line,omitempty" jsonschema:"minimum=0"`
	Kind     string       `json:"kind" jsonschema:"enum=watch,enum=syscall,enum=delete,enum=delete_watch,enum=control"`
	List     string       `json:"list,omitempty"`
	Action   string       `json:"action,omitempty"`
	Arch     string       `json:"arch,omitempty"`
	Syscalls []string     `json:"syscalls"`
	Path     string       `json:"path,omitempty"`
	Perms    string       `json:"perms,omitempty"`
	Fields   []AuditField `json:"fields"`
	Key      string       `json:"key,omitempty"`
	Text     string       `json:"text"`
}

// AuditField is one -F field op value.
type AuditField struct {
	Name  string `json:"name"`
	Op    string `json:"op"`
	Value string `json:"value"`
}

// AuditdConfig is what auditd.conf says about keeping the log, with
// auditd's defaults for what it leaves out, lower-cased.
type AuditdConfig struct {
	Path                 string `json:"path"`
	LogFile              string `json:"log_file" factschema:"located"`
	MaxLogFileAction     string `json:"max_log_file_action" factschema:"located"`
	NumLogs              int    `json:"num_logs" jsonschema:"minimum=0" factschema:"located"`
	SpaceLeftAction      string `json:"space_left_action" factschema:"located"`
	AdminSpaceLeftAction string `json:"admin_space_left_action" factschema:"located"`
	DiskFullAction       string `json:"disk_full_action" factschema:"located"`
	DiskErrorAction      string `json:"disk_error_action" factschema:"located"`
	// Locations say where auditd.conf sets the settings above, by their
	// JSON name; one left at auditd's default has none.
	Locations map[string]collect.FileLine `json:"locations,omitempty" factschema:"locations"`
}

// AuditRemote says where audit records are forwarded: by audisp-remote
// (its plugin active and the server it names), or by
// systemd-journal-upload (enabled, and its URL).
type AuditRemote struct {
	AudispRemoteActive bool   `json:"audisp_remote_active"`
	AudispRemoteServer string `json:"audisp_remote_server,omitempty"`
	JournalUpload      bool   `json:"journal_upload"`
	JournalUploadURL   string `json:"journal_upload_url,omitempty"`
}
