package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// ModulePath is the import path of the troupe module.
const ModulePath = "github.com/troupe-dev/troupe"

// Repo is a checkout of the troupe module and a Go toolchain, which the
// suite needs to build the Wasm and go-plugin versions of the envs and to
// read the project's agentfiles.
type Repo struct {
	Root string // the module root (the directory of go.mod)
	Go   string // the go command
}

// FindRepo returns the troupe checkout at dir, or, when dir is empty, the
// one the current directory is in (as `go env GOMOD` says). The error says
// what is missing: the Go toolchain, a module, or the troupe module.
func FindRepo(ctx context.Context, dir string) (Repo, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return Repo{}, fmt.Errorf("no Go toolchain on PATH (%v)", err)
	}
	if dir == "" {
		out, err := exec.CommandContext(ctx, goTool, "env", "GOMOD").Output()
		if err != nil {
			return Repo{}, fmt.Errorf("go env GOMOD: %v", err)
		}
		mod := strings.TrimSpace(string(out))
		if mod == "" || mod == os.DevNull {
			return Repo{}, errors.New("the current directory is not inside the troupe module (go env GOMOD is empty); run from the repository")
		}
		dir = filepath.Dir(mod)
	}
	path, err := modulePath(filepath.Join(dir, "go.mod"))
	if err != nil {
		return Repo{}, err
	}
	if path != ModulePath {
		return Repo{}, fmt.Errorf("%s is module %s, not %s; run from the troupe repository", filepath.Join(dir, "go.mod"), path, ModulePath)
	}
	return Repo{Root: dir, Go: goTool}, nil
}

// modulePath reads the module directive of a go.mod file.
func modulePath(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module directive", gomod)
}

// Plugin is one plugin build: a main package of the module built for the
// Wasm host (GOOS=wasip1 GOARCH=wasm -buildmode=c-shared) or as a native
// go-plugin binary, or a C source file built for the Wasm host with clang.
type Plugin struct {
	Key  string // "wasm/lbf", "wasm-c/lbf", "grpc/writing", …
	Pkg  string // Go package path relative to the module root
	Wasm bool
	// C is a C source file relative to the module root, built instead of
	// Pkg with $CC (default clang) for wasm32-wasi against sdk/.
	C string
}

// StepPlugins are the plugins of the env-step comparison: LBF and writing,
// each through Wasm (a Go guest) and through go-plugin, and LBF through
// Wasm as a C guest (examples/c-lbf, the same env ported to C).
var StepPlugins = []Plugin{
	{Key: "wasm/lbf", Pkg: "./examples/wasm-lbf", Wasm: true},
	{Key: "wasm-c/lbf", C: "examples/c-lbf/lbf.c", Wasm: true},
	{Key: "wasm/writing", Pkg: "./internal/bench/guests/wasmwriting", Wasm: true},
	{Key: "grpc/lbf", Pkg: "./internal/testplugins/grpc/lbf"},
	{Key: "grpc/writing", Pkg: "./internal/bench/guests/grpcwriting"},
}

// Build builds the plugins into dir, two at a time, and returns the file
// of each plugin that built and the error of each that did not.
func (r Repo) Build(ctx context.Context, dir string, plugins []Plugin) (files map[string]string, errs map[string]error) {
	files, errs = map[string]string{}, map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, p := range plugins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			name := strings.ReplaceAll(p.Key, "/", "-")
			if p.Wasm {
				name += ".wasm"
			}
			out := filepath.Join(dir, name)
			cmd, err := r.buildCommand(ctx, p, out)
			var b []byte
			if err == nil {
				b, err = cmd.CombinedOutput()
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				what := "go build " + p.Pkg
				if p.C != "" {
					what = "clang " + p.C
				}
				errs[p.Key] = fmt.Errorf("%s: %v: %s", what, err, strings.TrimSpace(string(b)))
				return
			}
			files[p.Key] = out
		}()
	}
	wg.Wait()
	return files, errs
}

// buildCommand returns the command that builds p into out.
func (r Repo) buildCommand(ctx context.Context, p Plugin, out string) (*exec.Cmd, error) {
	if p.C != "" {
		cc := os.Getenv("CC")
		if cc == "" {
			cc = "clang"
		}
		cc, err := exec.LookPath(cc)
		if err != nil {
			return nil, fmt.Errorf("no C compiler for the C guest (%v); install clang, lld and wasi-libc", err)
		}
		cmd := exec.CommandContext(ctx, cc, "--target=wasm32-wasi", "-mexec-model=reactor", "-O2",
			"-I", filepath.Join(r.Root, "sdk"), "-o", out, filepath.Join(r.Root, p.C))
		cmd.Dir = r.Root
		return cmd, nil
	}
	args := []string{"build", "-o", out}
	if p.Wasm {
		args = append(args, "-buildmode=c-shared")
	}
	cmd := exec.CommandContext(ctx, r.Go, append(args, p.Pkg)...)
	cmd.Dir = r.Root
	cmd.Env = os.Environ()
	if p.Wasm {
		cmd.Env = append(cmd.Env, "GOOS=wasip1", "GOARCH=wasm")
	}
	return cmd, nil
}
