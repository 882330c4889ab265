package writing

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/rewards/consistency"
)

func TestZZRender3(t *testing.T) {
	for _, f := range []string{"r_3245-refined-impls.md", "r_3662-mergeable-rustdoc-cross-crate-info.md", "r_3716-target-modifiers.md"} {
		b, _ := os.ReadFile("/tmp/h3b/" + f)
		lines := strings.Split(string(b), "\n")
		rep := consistency.Check(b)
		fmt.Println(f, rep.Checks[10].Detail)
		// bisect: find smallest prefix with us>0
		for n := 1; n <= len(lines); n++ {
			r := consistency.Check([]byte(strings.Join(lines[:n], "\n")))
			if strings.Contains(r.Checks[10].Detail, "us ") {
				fmt.Println("  first at line", n, ":", lines[n-1])
				for k := max(0, n-6); k < n; k++ {
					fmt.Println("     |", lines[k])
				}
				break
			}
		}
	}
}
