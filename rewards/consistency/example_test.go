package consistency_test

import (
	"fmt"

	"github.com/troupe-dev/troupe/rewards/consistency"
)

func ExampleCheck() {
	doc := `# Tidy bullets

## Summary

We keep one bullet marker.

- one
- two
* three

## Motivation

Our readers notice when the style changes.
`
	tmpl := &consistency.Template{Title: true, Sections: []string{"Summary", "Motivation"}}
	r := consistency.Options{Template: tmpl}.Check([]byte(doc))
	for _, c := range r.Checks {
		if c.Pass < 1 {
			fmt.Printf("%s %.2f (%s)\n", c.Name, c.Pass, c.Detail)
		}
	}
	fmt.Printf("score %.3f\n", r.Score)
	// Output:
	// bullet_style 0.33 (bullets: - 2, * 1)
	// score 0.917
}
