package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestNeed(t *testing.T) {
	t.Setenv(RequireEnv, "")
	skipped := t.Run("missing", func(t *testing.T) { Need(t, errors.New("no tool")); t.Fatal("not skipped") })
	if !skipped {
		t.Fatal("a missing tool failed the test without " + RequireEnv)
	}
	t.Run("present", func(t *testing.T) { Need(t, nil) })
}

// A clang on PATH that cannot build for wasm32-wasi (Debian's clang
// without lld or wasi-libc) is a missing tool, named with what to install.
func TestClangMustBuild(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script stands in for clang")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "clang")
	script := "#!/bin/sh\necho 'clang: error: unable to execute command: Executable \"wasm-ld\" doesn'\\''t exist!' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	err := clangBuilds(fake)
	if err == nil || !strings.Contains(err.Error(), "cannot build a wasm32-wasi module") || !strings.Contains(err.Error(), "apt-get install clang lld wasi-libc") || !strings.Contains(err.Error(), "wasm-ld") {
		t.Errorf("a clang that cannot link: %v", err)
	}
	if err := clangBuilds(filepath.Join(dir, "no-such-clang")); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("no clang: %v", err)
	}
	// The machine's own clang, where the tests need it to work.
	if err := Clang(); err != nil && Required() {
		t.Errorf("%v, and %s is set", err, RequireEnv)
	}
}
