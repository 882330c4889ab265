package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The stdout exporter of [telemetry] writes, in troupe train, to the run
// directory's telemetry.jsonl (one JSON object a line, none on the
// terminal), and in troupe eval to stderr (stdout stays the report).
func TestTelemetryStdoutDestinations(t *testing.T) {
	af := writeAgentfile(t, climbing+"[telemetry]\nexporter = \"stdout\"\n")
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := troupe(t, "train", "-f", af, "--out", out, "--no-eval")
	if code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout+stderr, `"SpanContext"`) {
		t.Errorf("train printed spans to the terminal:\nstdout %q\nstderr %q", stdout, stderr)
	}
	f, err := os.Open(filepath.Join(out, telemetryFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]int{}
	lines := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		lines++
		var v struct{ Name string }
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s line %d is not JSON: %v: %.200s", telemetryFile, lines, err, sc.Text())
		}
		names[v.Name]++
	}
	if names["train iteration 1"] != 1 || names["invoke_workflow matrix"] == 0 {
		t.Errorf("%s has the spans %v; want train iteration 1 and invoke_workflow matrix", telemetryFile, names)
	}

	code, stdout, stderr = troupe(t, "eval", "-f", af)
	if code != exitOK {
		t.Fatalf("eval: exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, `"SpanContext"`) || !strings.Contains(stderr, `"invoke_workflow matrix"`) {
		t.Errorf("eval: spans on stdout %v, on stderr %v; want stderr only", strings.Contains(stdout, `"SpanContext"`), strings.Contains(stderr, `"invoke_workflow matrix"`))
	}
}
