package lock

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzParse holds the parser to what a lock file's readers rely on: any
// input is refused or read, never a panic, and what is read writes back to
// a canonical text that reads as the same lock.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("gpuhost.lock/v1\n"))
	f.Add([]byte("gpuhost.lock/v1\npackage a=1:2~b+c all " + sumA + "\n"))
	f.Add([]byte("gpuhost.lock/v1\nsnapshot 20250101T000000Z\nkeyring /a " + sumB + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(data)
		if err != nil {
			if l != nil {
				t.Fatal("a lock returned with an error")
			}
			return
		}
		out := l.Marshal()
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("Marshal wrote a lock Parse refuses: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back, l) {
			t.Fatalf("round trip changed the lock:\n%+v\n%+v", l, back)
		}
		if !bytes.Equal(back.Marshal(), out) {
			t.Fatal("Marshal is not canonical")
		}
	})
}
