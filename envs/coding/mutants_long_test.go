package coding

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/sandbox"
)

// TestMutantStatisticsLong runs every pooled mutant of every HumanEval task
// against its hidden tests and its visible examples, and reports the
// fraction of equivalent mutants (those that pass every hidden test), the
// fraction of wrong mutants the examples catch, and how many loop until the
// timeout. It runs only when TROUPE_CODING_MUTANTS=1 (about 3 minutes).
func TestMutantStatisticsLong(t *testing.T) {
	if os.Getenv("TROUPE_CODING_MUTANTS") == "" {
		t.Skip("set TROUPE_CODING_MUTANTS=1 to run")
	}
	ds, err := HumanEval()
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultParams()
	sb, err := sharedSandbox(p.Interpreter, p.TimeoutS, core.Sandbox{})
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	var total, equivalent, wrong, caught, timeouts int
	byKind := map[string][2]int{}
	for ti := range ds.Tasks {
		info, err := prepareTask(sb, ds, &ds.Tasks[ti], p.MutantsPerFunction)
		if err != nil {
			t.Fatal(err)
		}
		var progs []sandbox.Program
		for _, m := range info.mutants {
			code := info.task.Prompt + m.Code
			progs = append(progs,
				sandbox.Program{TaskID: info.task.TaskID, Code: code, Test: info.hidden},
				sandbox.Program{TaskID: info.task.TaskID, Code: code, Test: info.visible})
		}
		res, err := sb.RunAll(context.Background(), progs)
		if err != nil {
			t.Fatal(err)
		}
		for k, m := range info.mutants {
			hidden, visible := res[2*k], res[2*k+1]
			total++
			kc := byKind[m.Kind]
			kc[0]++
			if hidden.Stop == sandbox.StopTimeout {
				timeouts++
			}
			if hidden.OK() {
				equivalent++
				kc[1]++
			} else {
				wrong++
				if !visible.OK() {
					caught++
				}
			}
			byKind[m.Kind] = kc
		}
	}
	t.Logf("%d tasks, %d pooled mutants: %.3f equivalent (pass every hidden test); the examples catch %.3f of the %d wrong ones; %d loop until the timeout; %v",
		len(ds.Tasks), total, float64(equivalent)/float64(total), float64(caught)/float64(wrong), wrong, timeouts, time.Since(begin).Round(time.Second))
	for _, k := range kindOrder {
		t.Logf("  %-10s %4d mutants, %.3f equivalent", k, byKind[k][0], float64(byKind[k][1])/float64(max(1, byKind[k][0])))
	}
}
