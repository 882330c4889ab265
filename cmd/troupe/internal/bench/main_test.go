package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-dev/troupe/internal/testenv"
	grpcplugin "github.com/troupe-dev/troupe/plugins/grpc"
)

// moduleRoot is the repository root, from the package's directory (where
// go test runs its tests).
const moduleRoot = "../../../.."

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

// testPlugins are the step comparison's plugins by pluginKey, built the way
// scripts/bench.sh builds them for troupe bench.
var testPlugins = map[string]struct {
	pkg  string // a main package, relative to the module root
	wasm bool   // built with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared
	c    string // instead of pkg: a C file built with clang for wasm32-wasi
}{
	"wasm/lbf":     {pkg: "./examples/wasm-lbf", wasm: true},
	"wasm-c/lbf":   {c: "examples/c-lbf/lbf.c"},
	"wasm/writing": {pkg: "./cmd/troupe/internal/bench/guests/wasmwriting", wasm: true},
	"grpc/lbf":     {pkg: "./internal/testplugins/grpc/lbf"},
	"grpc/writing": {pkg: "./cmd/troupe/internal/bench/guests/grpcwriting"},
}

// built caches plugin builds across the tests and benchmarks of one run.
var built struct {
	mu    sync.Mutex
	files map[string]string
}

// pluginFile builds the testPlugins entry key (once per test binary) and
// returns its file; the C guest skips tb without clang.
func pluginFile(tb testing.TB, key string) string {
	tb.Helper()
	built.mu.Lock()
	defer built.mu.Unlock()
	if f, ok := built.files[key]; ok {
		return f
	}
	p, ok := testPlugins[key]
	if !ok {
		tb.Fatalf("no plugin %q", key)
	}
	out := filepath.Join(pluginDir, strings.ReplaceAll(key, "/", "-"))
	var cmd *exec.Cmd
	switch {
	case p.c != "":
		testenv.Need(tb, testenv.Clang())
		cmd = exec.Command("clang", "--target=wasm32-wasi", "-mexec-model=reactor", "-O2", "-I", "sdk", "-o", out, p.c)
	case p.wasm:
		cmd = exec.Command("go", "build", "-buildmode=c-shared", "-o", out, p.pkg)
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	default:
		cmd = exec.Command("go", "build", "-o", out, p.pkg)
	}
	cmd.Dir = moduleRoot
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building %s: %s: %v\n%s", key, cmd, err, b)
	}
	if built.files == nil {
		built.files = map[string]string{}
	}
	built.files[key] = out
	return out
}
