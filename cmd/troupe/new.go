package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"text/template"

	"github.com/troupe-dev/troupe/sdk"
)

// troupeModule is the module path of troupe itself.
const troupeModule = "github.com/troupe-dev/troupe"

func init() {
	commands["new"] = command{"scaffold a Wasm env or reward plugin in Go or C", runNew}
}

var scaffoldName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func runNew(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("new", "new env|reward NAME [--lang go|c] [--dir DIR] [--troupe-root PATH]", stdout, stderr)
	lang := fs.String("lang", "go", "plugin language: go or c")
	dir := fs.String("dir", "", "directory to create (default ./NAME)")
	root := fs.String("troupe-root", "", "troupe checkout for the Go plugin's replace directive (default: the one this binary was built from)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if len(pos) != 2 || (pos[0] != "env" && pos[0] != "reward") {
		fmt.Fprintln(fs.Output(), "troupe new: want a kind (env or reward) and a name")
		fs.Usage()
		return exitUsage
	}
	kind, name := pos[0], pos[1]
	if !scaffoldName.MatchString(name) {
		fmt.Fprintf(stderr, "troupe new: name %q: want lower-case letters, digits and underscores, starting with a letter\n", name)
		return exitUsage
	}
	if *lang != "go" && *lang != "c" {
		fmt.Fprintf(stderr, "troupe new: --lang %q: want go or c\n", *lang)
		return exitUsage
	}
	if *dir == "" {
		*dir = name
	}
	if _, err := os.Stat(*dir); err == nil {
		fmt.Fprintf(stderr, "troupe new: %s already exists\n", *dir)
		return exitUsage
	}
	files, err := scaffold(kind, name, *lang, *root)
	if err != nil {
		fmt.Fprintln(stderr, "troupe new:", err)
		return exitUsage
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintln(stderr, "troupe new:", err)
		return exitRuntime
	}
	for _, f := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(f.name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(*dir, f.name), f.data, mode); err != nil {
			fmt.Fprintln(stderr, "troupe new:", err)
			return exitRuntime
		}
		fmt.Fprintln(stdout, filepath.Join(*dir, f.name))
	}
	fmt.Fprintf(stdout, "\nbuild it with: sh %s\nthen train with it: troupe train -f %s (it loads source = \"wasm:%s\")\n",
		filepath.Join(*dir, "build.sh"), filepath.Join(*dir, "agentfile.toml"), name+".wasm")
	return exitOK
}

type scaffoldFile struct {
	name string
	data []byte
}

type scaffoldData struct {
	Name, Kind, Lang string
	// For Go: the require and replace lines of go.mod and the go version.
	GoVersion, Require, Replace string
}

// scaffold returns the files of a new plugin.
func scaffold(kind, name, lang, root string) ([]scaffoldFile, error) {
	d := scaffoldData{Name: name, Kind: kind, Lang: lang}
	var files []scaffoldFile
	add := func(file, tmpl string) error {
		t, err := template.New(file).Parse(tmpl)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := t.Execute(&b, d); err != nil {
			return err
		}
		files = append(files, scaffoldFile{file, b.Bytes()})
		return nil
	}
	var err error
	switch lang {
	case "go":
		var goSum []byte
		d.GoVersion, d.Require, d.Replace, goSum, err = goModuleLines(root)
		if err != nil {
			return nil, err
		}
		if err = add("go.mod", goModTemplate); err != nil {
			return nil, err
		}
		if goSum != nil {
			files = append(files, scaffoldFile{"go.sum", goSum})
		}
		src := goEnvTemplate
		if kind == "reward" {
			src = goRewardTemplate
		}
		if err = add("main.go", src); err != nil {
			return nil, err
		}
		err = add("build.sh", goBuildTemplate)
	case "c":
		src := cEnvTemplate
		if kind == "reward" {
			src = cRewardTemplate
		}
		if err = add(name+".c", src); err != nil {
			return nil, err
		}
		files = append(files, scaffoldFile{"troupe_plugin.h", sdk.CHeader()})
		err = add("build.sh", cBuildTemplate)
	}
	if err != nil {
		return nil, err
	}
	// An agentfile that trains with the plugin, beside it.
	agentfile := envAgentfileTemplate
	if kind == "reward" {
		agentfile = rewardAgentfileTemplate
	}
	if err := add("agentfile.toml", agentfile); err != nil {
		return nil, err
	}
	return files, nil
}

// goModuleLines decides how the generated go.mod finds troupe: a replace
// directive to root (the --troupe-root flag, else the checkout this binary
// was built from, found through its source paths), else the version this
// binary was built as.
func goModuleLines(root string) (goVersion, require, replace string, goSum []byte, err error) {
	if root == "" {
		root = sourceRoot()
	}
	if root != "" {
		abs, err := filepath.Abs(root)
		if err != nil {
			return "", "", "", nil, err
		}
		gomod, err := os.ReadFile(filepath.Join(abs, "go.mod"))
		if err != nil {
			return "", "", "", nil, fmt.Errorf("--troupe-root %s: %w", root, err)
		}
		mod, ver := modLine(gomod, "module"), modLine(gomod, "go")
		if mod != troupeModule {
			return "", "", "", nil, fmt.Errorf("--troupe-root %s: go.mod declares module %q, not %s", root, mod, troupeModule)
		}
		sum, _ := os.ReadFile(filepath.Join(abs, "go.sum"))
		return ver, troupeModule + " v0.0.0-00010101000000-000000000000", troupeModule + " => " + abs, sum, nil
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path == troupeModule && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return strings.TrimPrefix(bi.GoVersion, "go"), troupeModule + " " + bi.Main.Version, "", nil, nil
	}
	return "", "", "", nil, errors.New("cannot tell where the troupe module is: pass --troupe-root with the path of a troupe checkout")
}

// sourceRoot returns the troupe checkout this binary was compiled from, if
// its sources are still there (not with -trimpath).
func sourceRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	root := filepath.Join(filepath.Dir(file), "..", "..")
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || modLine(gomod, "module") != troupeModule {
		return ""
	}
	return root
}

// modLine returns the argument of the first go.mod line starting with
// directive.
func modLine(gomod []byte, directive string) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), directive+" "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}
