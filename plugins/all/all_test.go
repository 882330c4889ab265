package all_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	_ "github.com/troupe-dev/troupe/plugins/all"
)

// TestEveryEnvDirectoryIsRegistered fails when a package under envs/ is
// not imported by package all: each envs/NAME registers builtin:NAME.
func TestEveryEnvDirectoryIsRegistered(t *testing.T) {
	entries, err := os.ReadDir("../../envs")
	if err != nil {
		t.Fatal(err)
	}
	envs, rewards := core.Builtins()
	for _, e := range entries {
		if e.IsDir() && !slices.Contains(envs, e.Name()) {
			t.Errorf("envs/%s is not registered (have %v): import it in plugins/all", e.Name(), envs)
		}
	}
	if len(rewards) == 0 {
		t.Error("no built-in rewards registered: import rewards in plugins/all")
	}
}

// TestPluginSchemesAreRegistered checks that "wasm:" and "grpc:" sources
// reach their loaders (which then fail on the missing file) rather than
// failing as an unknown scheme.
func TestPluginSchemesAreRegistered(t *testing.T) {
	for _, scheme := range []string{"wasm", "grpc"} {
		_, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: scheme, Path: "testdata/no-such-plugin"})
		if err == nil || strings.Contains(err.Error(), "unknown source scheme") {
			t.Errorf("%s: err = %v, want the loader's error about the missing file", scheme, err)
		}
	}
}
