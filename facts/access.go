package facts

// Access is who may log in and what they may do as root: accounts and
// groups, sudo's rules, sshd's PAM stack, and what under /etc others may
// write.
type Access struct {
	Users  []Account `json:"users"`
	Groups []Group   `json:"groups"`
	// Sudo is nil when the target has no /etc/sudoers.
	Sudo *Sudo `json:"sudo,omitempty"`
	// PAMSSHD is /etc/pam.d/sshd with its includes expanded in place;
	// nil when the file is absent.
	PAMSSHD []PAMRule `json:"pam_sshd"`
	// EtcWritable lists what under /etc a group other than root's, or
	// anyone, may write.
	EtcWritable []WritableFile `json:"etc_writable"`
	// LoginDefs is /etc/login.defs, the shadow suite's defaults for new
	// passwords and sessions; nil when the file is absent.
	LoginDefs *LoginDefs `json:"login_defs,omitempty"`
}

// LoginDefs is /etc/login.defs as the shadow suite reads it: each
// keyword's value, the last line that sets it winning.
type LoginDefs struct {
	File string `json:"file"`
	// Settings maps an upper-case keyword (PASS_MAX_DAYS, UMASK) to its
	// value as written.
	Settings map[string]string `json:"settings"`
	// Lines maps each keyword of Settings to the line its value is on.
	Lines map[string]int `json:"lines"`
}

// Account is one /etc/passwd entry with the state of its /etc/shadow
// password: "hash", "locked" (! or *), "empty", or "none" when shadow has
// no entry (the passwd field then decides: "x" means none at all).
type Account struct {
	Name string `json:"name"`
	UID  int    `json:"uid" jsonschema:"minimum=0"`
	GID  int    `json:"gid" jsonschema:"minimum=0"`
	// Home is the home directory, as written; documents saved before it
	// was collected lack it.
	Home     string `json:"home,omitempty"`
	Shell    string `json:"shell"`
	Password string `json:"password" jsonschema:"enum=hash,enum=locked,enum=empty,enum=none"`
}

// Group is one /etc/group entry; Members lists its secondary members.
type Group struct {
	Name    string   `json:"name"`
	GID     int      `json:"gid" jsonschema:"minimum=0"`
	Members []string `json:"members"`
}

// Sudo is sudoers and the files it includes.
type Sudo struct {
	Files    []string      `json:"files"`
	Rules    []SudoRule    `json:"rules"`
	Defaults []SudoDefault `json:"defaults"`
}

// SudoRule is one user specification, with User_Alias, Runas_Alias and
// Cmnd_Alias names expanded. Users holds names and %groups as written;
// AllCommands says whether ALL is among the commands; NoPasswd whether
// any command runs without a password.
type SudoRule struct {
	File        string   `json:"file"`
	Line        int      `json:"line" jsonschema:"minimum=0"`
	Users       []string `json:"users"`
	Hosts       []string `json:"hosts"`
	RunAs       []string `json:"run_as"`
	Commands    []string `json:"commands"`
	AllCommands bool     `json:"all_commands"`
	NoPasswd    bool     `json:"no_passwd"`
}

// SudoDefault is one setting of a Defaults line. Scope is what follows
// "Defaults" (@host, :user, >runas, !command), empty for every use.
type SudoDefault struct {
	File    string `json:"file"`
	Line    int    `json:"line" jsonschema:"minimum=0"`
	Scope   string `json:"scope"`
	Name    string `json:"name"`
	Value   string `json:"value"`
	Negated bool   `json:"negated"`
}

// PAMRule is one line of a PAM stack: type (auth, account, password,
// session), control, module and arguments.
type PAMRule struct {
	File    string   `json:"file"`
	Line    int      `json:"line" jsonschema:"minimum=0"`
	Type    string   `json:"type"`
	Control string   `json:"control"`
	Module  string   `json:"module"`
	Args    []string `json:"args"`
}

// WritableFile is a file or directory under /etc that someone other than
// its owner may write: Group names the owning group when it may.
type WritableFile struct {
	Path          string `json:"path"`
	Mode          string `json:"mode"`
	GID           int    `json:"gid" jsonschema:"minimum=0"`
	Group         string `json:"group,omitempty"`
	GroupWritable bool   `json:"group_writable"`
	WorldWritable bool   `json:"world_writable"`
}
