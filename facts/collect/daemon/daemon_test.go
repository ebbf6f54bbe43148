package daemon

import (
	"slices"
	"testing"
)

func TestCommandLines(t *testing.T) {
	for in, want := range map[string][]string{
		"/usr/sbin/sshd\x00-D\x00-e\x00-f\x00/tmp/x\x00-o\x00PidFile=none\x00":            {"/usr/sbin/sshd", "-D", "-e", "-f", "/tmp/x", "-o", "PidFile=none"},
		"sshd: /usr/sbin/sshd -Def/tmp/y [listener] 0 of 10-100 startups\x00":             {"/usr/sbin/sshd", "-Def/tmp/y"},
		"nginx: master process /usr/sbin/nginx -c /x.conf -g daemon off; pid /p;\x00\x00": {"/usr/sbin/nginx", "-c", "/x.conf", "-g", "daemon", "off;", "pid", "/p;"},
		"nginx: worker process\x00": nil,
	} {
		if got := SplitCmdline(in); !slices.Equal(got, want) {
			t.Errorf("SplitCmdline(%q) = %q, want %q", in, got, want)
		}
	}
}
