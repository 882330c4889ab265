package writing

import (
	"os"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/rewards/consistency"
)

func TestZZRender2(t *testing.T) {
	rs, _ := LoadShipped()
	st := Style{Setext: false, Case: consistency.CaseSentence, Bullet: '+', Emphasis: "_", Strong: "__", Fence: consistency.CodeTilde, Spelling: consistency.SpellingUK, Person: consistency.PersonSingular}
	for _, r := range rs {
		var parts []string
		for _, u := range r.Units {
			parts = append(parts, strings.TrimSpace(render(u.Source, st, slipNone, 0)))
		}
		os.WriteFile("/tmp/h3b/r_"+r.Name+".md", []byte(strings.Join(parts, "\n\n")+"\n"), 0o644)
	}
}
