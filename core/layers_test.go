package core_test

import (
	"go/build"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/troupe-dev/troupe/"

// layers is the import direction inside core, lowest first: a package may
// import the packages of lower layers and none of its own or higher ones.
// RATIONALE.md ("Project structure") says why.
var layers = [][]string{
	{"core"},
	{"core/safetensors", "core/llm", "core/telemetry"},
	{"core/policy"},
	{"core/grpo", "core/rollout"},
	{"core/envtest", "core/trainer", "core/cluster"},
	{"core/agentfile"},
}

// TestImportDirection checks the room rules of RATIONALE.md on the
// non-test files of every package: the layers of core, core importing no
// other top-level room, envs importing no reward, rewards no env, and
// plugins neither.
func TestImportDirection(t *testing.T) {
	root, files := moduleGoFiles(t)
	rank := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			rank[p] = i
		}
	}
	dirs := map[string]bool{}
	for _, f := range files {
		dirs[path.Dir(f)] = true
	}
	checked := 0
	for _, rel := range slices.Sorted(maps.Keys(dirs)) {
		pkg, err := build.ImportDir(filepath.Join(root, rel), 0)
		if err != nil {
			continue // only test files, or only files for another GOOS
		}
		checked++
		for _, imp := range pkg.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if msg := forbidden(rel, dep, rank); msg != "" {
				t.Errorf("%s imports %s: %s", rel, dep, msg)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d packages", checked)
	}
}

// forbidden says why package pkg may not import dep, or "".
func forbidden(pkg, dep string, rank map[string]int) string {
	room := func(p string) string { r, _, _ := strings.Cut(p, "/"); return r }
	switch {
	case pkg == "core" || strings.HasPrefix(pkg, "core/"):
		if !strings.HasPrefix(dep, "core") && !strings.HasPrefix(dep, "internal/") {
			return "core imports nothing of " + room(dep) + "/"
		}
		if strings.HasPrefix(dep, "internal/") {
			if pkg == "core" {
				return "the API imports nothing of troupe, internal helpers included"
			}
			return ""
		}
		rp, okp := rank[pkg]
		rd, okd := rank[dep]
		if !okp || !okd {
			return "a core package missing from the layers of layers_test.go"
		}
		if rd >= rp {
			return "against the layers of core (a package imports only lower layers)"
		}
	case room(pkg) == "envs" && room(dep) == "rewards":
		return "an env never imports a reward"
	case room(pkg) == "rewards" && room(dep) == "envs":
		return "a reward never imports an env"
	case pkg == "plugins/all":
		return "" // the table of built-ins: it imports every one by design
	case room(pkg) == "plugins" && slices.Contains([]string{"envs", "rewards", "cmd", "examples"}, room(dep)):
		return "a plugin host loads modules; it imports no task"
	}
	return ""
}

func TestForbiddenImports(t *testing.T) {
	rank := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			rank[p] = i
		}
	}
	for _, c := range []struct {
		pkg, dep string
		bad      bool
	}{
		{"core/trainer", "core/grpo", false},
		{"core/grpo", "core/trainer", true},
		{"core/rollout", "core/grpo", true}, // same layer
		{"core", "core/llm", true},
		{"core/llm", "envs/writing", true},
		{"core/policy", "internal/atomicfile", false},
		{"core", "internal/atomicfile", true},
		{"envs/writing", "rewards/consistency", true},
		{"rewards", "envs/coding", true},
		{"plugins/wasm", "envs/lbf", true},
		{"cmd/troupe", "envs/lbf", false},
		{"plugins/all", "envs/lbf", false},
		{"core/newthing", "core", true}, // not in the layers
	} {
		if got := forbidden(c.pkg, c.dep, rank) != ""; got != c.bad {
			t.Errorf("forbidden(%s → %s) = %v, want %v", c.pkg, c.dep, got, c.bad)
		}
	}
}
