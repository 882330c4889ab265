package writing

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/rewards/consistency"
)

func TestZZRender(t *testing.T) {
	rs, _ := LoadShipped()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, r := range rs {
		for rep := 0; rep < 4; rep++ {
			st := drawStyle(rng)
			var parts []string
			for _, u := range r.Units {
				parts = append(parts, strings.TrimSpace(render(u.Source, st, slipNone, 0)))
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
}
