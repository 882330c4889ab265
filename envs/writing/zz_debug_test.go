package writing_test

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/envs/writing"
)

func TestZZChecks(t *testing.T) {
	for _, name := range []string{"single_agent", "parallel_naive", "sop", "good"} {
		env, _ := writing.New(nil)
		sums := map[string]float64{}
		for seed := uint64(1); seed <= 100; seed++ {
			var p policy
			if name == "good" {
				p = goodPolicy
			} else {
				p = baselinePolicy(t, env, name)
			}
			res := runEpisode(t, env, seed, p)
			for k, v := range res.Metrics {
				if strings.HasPrefix(k, "consistency.") || k == "edits" || k == "reads" || k == "llm_calls" {
					sums[k] += v / 100
				}
			}
			if seed == 3 {
				os.WriteFile("/tmp/h3b/doc_"+name+".md", res.Artifacts["document.md"], 0o644)
			}
		}
		var ks []string
		for k := range sums {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		fmt.Println(name)
		for _, k := range ks {
			fmt.Printf("   %-35s %.4f\n", k, sums[k])
		}
	}
}
