package writing

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/rewards/consistency"
)

func drawCS(rng *rand.Rand) consistency.Style { return drawStyle(rng) }

func TestZZRender4(t *testing.T) {
	rs, _ := LoadShipped()
	rng := rand.New(rand.NewPCG(1, 2))
	nonidem := 0
	for _, r := range rs {
		for rep := 0; rep < 4; rep++ {
			st := drawCS(rng)
			var parts []string
			for _, u := range r.Units {
				x := strings.TrimSpace(consistency.Restyle(u.Source, st))
				y := strings.TrimSpace(consistency.Restyle(x, st))
				if x != y {
					nonidem++
					if nonidem < 4 {
						xl, yl := strings.Split(x, "\n"), strings.Split(y, "\n")
						for k := range min(len(xl), len(yl)) {
							if xl[k] != yl[k] {
								fmt.Printf("NONIDEM %s %+v\n  %q\n  %q\n", r.Name, st, xl[k], yl[k])
								break
							}
						}
					}
				}
				parts = append(parts, x)
			}
			doc := strings.Join(parts, "\n\n") + "\n"
			rep := consistency.Check([]byte(doc))
			for _, c := range rep.Checks {
				if c.Pass < 1 {
					fmt.Printf("%s %+v: %s %.3f %s\n", r.Name, st, c.Name, c.Pass, c.Detail)
				}
			}
		}
	}
	fmt.Println("nonidempotent units", nonidem)
}
