package consistency

import (
	"os"
	"testing"
)

func TestScratchRestyle(t *testing.T) {
	f := os.Getenv("RESTYLE")
	if f == "" {
		t.Skip()
	}
	b, _ := os.ReadFile(f)
	os.WriteFile("/tmp/h3a/out.md", []byte(Restyle(string(b), styleK(0))), 0o644)
}
