package sdk

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCHeaderReaders compiles testdata/header_harness.c natively with the
// header's readers for params, masks and observations, and checks what it
// prints: the params behave as core.DecodeParams (case-insensitive keys,
// null keeps the default, unknown keys and wrong types are errors naming
// the key, anything but a JSON object is bad input), masks and
// observations read back what was written.
func TestCHeaderReaders(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		if cc, err = exec.LookPath("clang"); err != nil {
			t.Skip("no C compiler (cc or clang)")
		}
	}
	bin := filepath.Join(t.TempDir(), "harness")
	if out, err := exec.Command(cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-o", bin, filepath.Join("testdata", "header_harness.c")).CombinedOutput(); err != nil {
		t.Fatalf("compiling the harness: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := `work=6 rate=0.25 on=0
work=6 rate=0.25 on=0
work=6 rate=0.25 on=0
work=9 rate=-0.15 on=1
work=6 rate=0.25 on=0
-1 params: unknown key "x"
-1 params: key "work": want int, got string
-1 params: key "work": want int, got number
-1 params: key "work": want an integer that fits in int64, got number
-1 params: key "on": want bool, got number
-1 params: key "rate": want number, got string
-2 params: want a JSON object
-2 params: want a JSON object
-2 params: trailing bytes after the JSON object
-2 params: malformed JSON
mask 1 0 0 1 0 0 0 0 1 1 end=1
short mask err=1
header ok=1
agent 0: 0.5 -2 legal 010 text hi
agent 1: 1 3 legal 111 text 
end=1
header wrong=0
`
	if got := string(out); got != want {
		t.Errorf("the harness printed\n%s\nwant\n%s", got, want)
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Errorf("first difference, line %d: %q, want %q", i+1, gl[i], wl[i])
				break
			}
		}
	}
}
