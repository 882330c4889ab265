package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchPolicySectionJSON(t *testing.T) {
	code, stdout, stderr := troupe(t, "bench", "--quick", "--only", "policy", "--benchtime", "2ms", "--json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var rep struct {
		Machine struct{ Cores int } `json:"machine"`
		Policy  *struct {
			PeakGFLOPS float64 `json:"peak_gflops"`
			Rows       []struct {
				Pass            string  `json:"pass"`
				Batch           int     `json:"batch"`
				DecisionsPerSec float64 `json:"decisions_per_sec"`
			} `json:"rows"`
		} `json:"policy"`
		Step []any `json:"env_step"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if rep.Machine.Cores < 1 || rep.Policy == nil || rep.Policy.PeakGFLOPS <= 0 || len(rep.Policy.Rows) == 0 || rep.Step != nil {
		t.Errorf("report %s", stdout)
	}
	if !strings.Contains(stderr, "bench: policy forward") {
		t.Errorf("no progress on stderr:\n%s", stderr)
	}
}

func TestBenchTableAndUsage(t *testing.T) {
	code, stdout, stderr := troupe(t, "bench", "--quick", "--only", "policy", "--benchtime", "2ms")
	if code != exitOK || !strings.Contains(stdout, "peak (best dot loop)") || !strings.Contains(stdout, "forward+backward") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if code, _, stderr := troupe(t, "bench", "--only", "warp"); code != exitUsage || !strings.Contains(stderr, `unknown section "warp"`) {
		t.Errorf("--only warp: exit %d, stderr %q; want 2 and the section named", code, stderr)
	}
	if code, _, _ := troupe(t, "bench", "extra"); code != exitUsage {
		t.Errorf("an extra argument: exit %d, want 2", code)
	}
	for _, tc := range []struct{ args, want []string }{
		{[]string{"--wasm", "lbf.wasm"}, []string{"want ENV=FILE", `"lbf.wasm"`}},
		{[]string{"--wasm-c", "writing=w.wasm"}, []string{"w.wasm", `env "writing" through "wasm-c"`, "lbf wasm-c"}},
		{[]string{"--grpc", "matrix=m"}, []string{`env "matrix"`}},
	} {
		code, _, stderr := troupe(t, append([]string{"bench", "--only", "policy"}, tc.args...)...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, stderr, w)
			}
		}
	}
}
