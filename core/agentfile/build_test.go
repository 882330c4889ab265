package agentfile_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core/agentfile"
	_ "github.com/troupe-dev/troupe/plugins/all"
)

// A reward weight that is not a finite number is an error at its line (or
// in --set) when the rewards are built, not at the first iteration.
func TestNonFiniteRewardWeight(t *testing.T) {
	const text = `[env]
source = "builtin:matrix"
[[rewards]]
source = "builtin:return"
[reward.weights]
return = WEIGHT
`
	for _, c := range []struct {
		weight, set string
		file        string
		line        int
	}{
		{weight: "nan", file: "agentfile.toml", line: 6},
		{weight: "-inf", file: "agentfile.toml", line: 6},
		{weight: "1.0", set: "reward.weights.return=inf", file: "--set"},
	} {
		path := filepath.Join(t.TempDir(), "agentfile.toml")
		if err := os.WriteFile(path, []byte(strings.Replace(text, "WEIGHT", c.weight, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		var sets []string
		if c.set != "" {
			sets = append(sets, c.set)
		}
		cfg, err := agentfile.Load(path, sets...)
		if err != nil {
			t.Fatal(err)
		}
		built, err := cfg.Build(context.Background())
		if err == nil {
			built.Close()
		}
		var e *agentfile.Error
		if !errors.As(err, &e) || e.Key != "reward.weights.return" || filepath.Base(e.File) != c.file || e.Line != c.line || !strings.Contains(e.Msg, "finite") {
			t.Errorf("weight %s %s: %v; want an error at %s:%d about reward.weights.return", c.weight, c.set, err, c.file, c.line)
		}
	}
}
