package bench

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/troupe-dev/troupe/internal/testenv"
	grpcplugin "github.com/troupe-dev/troupe/plugins/grpc"
)

var pluginDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "troupe-bench-test-")
	if err != nil {
		panic(err)
	}
	pluginDir = dir
	code := m.Run()
	grpcplugin.CleanupClients()
	os.RemoveAll(dir)
	os.Exit(code)
}

// built caches plugin builds across the tests and benchmarks of one run.
var built struct {
	mu    sync.Mutex
	files map[string]string
}

// pluginFile builds the StepPlugins entry key (once per test binary) and
// returns its file, skipping tb when there is no Go toolchain or checkout.
func pluginFile(tb testing.TB, key string) string {
	tb.Helper()
	built.mu.Lock()
	defer built.mu.Unlock()
	if f, ok := built.files[key]; ok {
		return f
	}
	repo, err := FindRepo(context.Background(), "")
	if err != nil {
		tb.Skipf("cannot build plugins: %v", err)
	}
	var p []Plugin
	for _, sp := range StepPlugins {
		if sp.Key == key {
			p = append(p, sp)
		}
	}
	if len(p) == 0 {
		tb.Fatalf("no plugin %q", key)
	}
	if p[0].C != "" {
		testenv.Need(tb, testenv.Clang())
	}
	files, errs := repo.Build(context.Background(), pluginDir, p)
	if err := errs[key]; err != nil {
		tb.Fatal(err)
	}
	if built.files == nil {
		built.files = map[string]string{}
	}
	built.files[key] = files[key]
	return files[key]
}

// repoRoot returns the checkout the tests run in, skipping tb without one.
func repoRoot(tb testing.TB) Repo {
	tb.Helper()
	repo, err := FindRepo(context.Background(), "")
	if err != nil {
		tb.Skipf("no troupe checkout: %v", err)
	}
	return repo
}
