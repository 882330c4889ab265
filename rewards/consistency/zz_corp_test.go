package consistency

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestScratchCorp(t *testing.T) {
	if os.Getenv("CORP") == "" {
		t.Skip()
	}
	ship, _ := filepath.Glob("/work/main/envs/writing/corpus/[0-9]*.md")
	hb, _ := os.ReadFile("/work/main/envs/writing/corpus/HELDOUT.txt")
	var held []string
	for _, n := range strings.Fields(string(hb)) {
		held = append(held, "/work/shared/data/rust-rfcs/"+n)
	}
	for _, set := range []struct {
		n  string
		fs []string
	}{{"shipped", ship}, {"heldout", held}} {
		var v []float64
		for _, f := range set.fs {
			b, _ := os.ReadFile(f)
			r := Options{Template: &Template{Sections: DefaultTemplate.Sections}}.Check(b)
			v = append(v, r.Score)
			if r.Score < 0.85 {
				fmt.Printf("%s %.3f", filepath.Base(f), r.Score)
				for _, c := range r.Checks {
					if c.Pass < 1 {
						fmt.Printf(" %s=%.2f", c.Name, c.Pass)
					}
				}
				fmt.Println()
			}
		}
		sort.Float64s(v)
		m := 0.0
		for _, x := range v {
			m += x
		}
		fmt.Printf("%s n=%d min %.3f med %.3f mean %.3f max %.3f\n", set.n, len(v), v[0], v[len(v)/2], m/float64(len(v)), v[len(v)-1])
	}
}

func TestScratchWords(t *testing.T) {
	f := os.Getenv("WORDS")
	if f == "" {
		t.Skip()
	}
	b, _ := os.ReadFile(f)
	d := parse(string(b), func(string) bool { return false })
	var p stripper
	for _, u := range d.units {
		pl := blankQuoted(p.plain(u.text, nil))
		eachWord(pl, func(w string, start int, prev, next byte) {
			if identifierLike(prev, next, pl[start+len(w):]) {
				return
			}
			if _, ok := spellIndex[lowerASCII(w)]; ok {
				fmt.Println(u.line, w)
			}
			if _, ok := personOf(w); ok && os.Getenv("P") != "" {
				fmt.Println(u.line, w)
			}
		})
	}
}
