package consistency

import (
	"os"
	"testing"
)

// benchDoc is a 32.7 KB shipped RFC.
const benchDoc = "../../envs/writing/corpus/3662-mergeable-rustdoc-cross-crate-info.md"

func BenchmarkCheck(b *testing.B) {
	doc, err := os.ReadFile(benchDoc)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		Check(doc)
	}
}
