package restyle_test

import (
	"fmt"

	"github.com/troupe-dev/troupe/envs/writing/internal/markdown"
	"github.com/troupe-dev/troupe/envs/writing/internal/restyle"
)

func ExampleMarkdown() {
	md := "## Prior art\n\nWe analyzed *three* tools:\n\n* one\n* two\n"
	fmt.Print(restyle.Markdown(md, restyle.Style{
		Heading:  markdown.HeadingSetext,
		Case:     markdown.CaseTitle,
		Bullet:   markdown.BulletDash,
		Emphasis: markdown.EmphasisUnderscore,
		Spelling: markdown.SpellingUK,
		Person:   markdown.PersonSingular,
	}))
	// Output:
	// Prior Art
	// ---------
	//
	// I analysed _three_ tools:
	//
	// - one
	// - two
}
