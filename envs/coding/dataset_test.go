package coding

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEmbeddedHumanEval(t *testing.T) {
	ds, err := HumanEval()
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Tasks) != 164 || ds.Tasks[0].TaskID != "HumanEval/0" || ds.Tasks[0].EntryPoint != "has_close_elements" {
		t.Fatalf("%d tasks, first %+v", len(ds.Tasks), ds.Tasks[0].TaskID)
	}
	if _, err := os.Stat("data/HumanEval.LICENSE"); err != nil {
		t.Fatal("the dataset's licence must ship beside it:", err)
	}
}

const goodLine = `{"task_id": "T/0", "prompt": "def f(x):\n    \"\"\"\n    >>> f(1)\n    2\n    \"\"\"\n", "entry_point": "f", "canonical_solution": "    return x + 1\n", "test": "def check(c):\n    assert c(2) == 3\n"}`

func TestLoadDatasetPlainAndGzip(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "d.jsonl")
	if err := os.WriteFile(plain, []byte(goodLine+"\n\n"+strings.Replace(goodLine, "T/0", "T/1", 1)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := LoadDataset(plain)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Tasks) != 2 || ds.Tasks[1].TaskID != "T/1" {
		t.Fatalf("tasks %+v", ds.Tasks)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(goodLine + "\n"))
	zw.Close()
	gz := filepath.Join(dir, "d.jsonl.gz")
	if err := os.WriteFile(gz, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if ds, err := LoadDataset(gz); err != nil || len(ds.Tasks) != 1 {
		t.Fatalf("gzip: %v", err)
	}
	// A custom dataset drives the env.
	e, err := New(map[string]any{"dataset": plain, "functions": 2, "agents": 1, "p_correct": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	res := playEpisode(t, e, 1, featurePolicy(policyRepairs))
	if res.Metrics["pass_rate"] != 1 {
		t.Fatalf("custom dataset episode: %v", res.Metrics)
	}
}

func TestLoadDatasetErrorsNameFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		content, want string
	}{
		{goodLine + "\n{not json}\n", "bad.jsonl:2:"},
		{goodLine + "\n" + goodLine + "\n", `bad.jsonl:2: task_id "T/0" already on line 1`},
		{"\n\n" + strings.Replace(goodLine, `"entry_point": "f", `, "", 1), `bad.jsonl:3: missing or empty field "entry_point"`},
		{strings.Replace(goodLine, `"entry_point": "f"`, `"entry_point": "f g"`, 1), "bad.jsonl:1: task T/0: entry_point"},
		{goodLine + " {}\n", "bad.jsonl:1: more than one JSON value"},
		{"\n", "bad.jsonl: no tasks"},
	} {
		path := filepath.Join(t.TempDir(), "bad.jsonl")
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadDataset(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want error containing %q, got %v", tc.want, err)
		}
	}
	if _, err := parseDataset("x.gz", []byte{0x1f, 0x8b, 0, 1}); err == nil || !strings.Contains(err.Error(), "x.gz: gzip") {
		t.Errorf("corrupt gzip: %v", err)
	}
}
