package restyle

import (
	"os"
	"testing"

	"github.com/troupe-dev/troupe/envs/writing/internal/markdown"
)

// benchDoc is a 32.7 KB shipped RFC.
const benchDoc = "../../corpus/3662-mergeable-rustdoc-cross-crate-info.md"

func BenchmarkMarkdown(b *testing.B) {
	doc, err := os.ReadFile(benchDoc)
	if err != nil {
		b.Fatal(err)
	}
	s := Style{markdown.HeadingSetext, markdown.CaseTitle, markdown.BulletPlus, markdown.EmphasisUnderscore,
		markdown.StrongUnderscore, markdown.CodeTilde, markdown.SpellingUK, markdown.PersonSingular}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		Markdown(string(doc), s)
	}
}
