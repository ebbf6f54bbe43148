package network

import (
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

func TestParseProcNet(t *testing.T) {
	socks, err := parseProcNet([]byte(collecttest.ProcTCP), "tcp", "0A")
	if err != nil || len(socks) != 3 || socks[1].Addr.String() != "127.0.0.1" || socks[1].Port != 631 || socks[1].Inode != 21002 {
		t.Errorf("%+v %v", socks, err)
	}
	for _, bad := range []string{
		"   0: 00000000:0016 00000000:0000 0A\n",
		"   0: 0000000:0016 00000000:0000 0A 0 0 0 0 0 1\n",
		"   0: 00000000:00016 00000000:0000 0A 0 0 0 0 0 1\n",
		"   0: 00000000:0016 00000000:0000 0A 0 0 0 0 0 x\n",
	} {
		if _, err := parseProcNet([]byte(bad), "tcp", "0A"); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
