// Package examples_test checks that the project's agentfiles still load:
// every examples/*/agentfile.toml and the root agentfile.toml.
package examples_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/trainer"
	_ "github.com/troupe-dev/troupe/plugins/all"
)

// TestAgentfilesBuild loads, builds and makes a trainer from every
// agentfile the project ships, as `troupe train` would before its first
// iteration: an unknown key, a bad value, a missing plugin or data file,
// a team size the env disagrees with or a weight no reward returns fails
// here rather than for the first user who runs the example.
func TestAgentfilesBuild(t *testing.T) {
	paths, err := filepath.Glob("*/agentfile.toml")
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, "../agentfile.toml")
	if len(paths) < 5 {
		t.Fatalf("found only %v", paths)
	}
	for _, path := range paths {
		name := filepath.Dir(path) // the example's directory
		if name == ".." {
			name = "root"
		}
		t.Run(name, func(t *testing.T) {
			cfg, err := agentfile.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			built, err := cfg.Build(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer built.Close()
			tr, err := trainer.New(built.Setup, built.Train)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			tr.Close()
		})
	}
}
