package suite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/troupe-dev/troupe/internal/sandbox"
)

// importedRe matches an import statement at the start of a line: "import a,
// b.c as d" (group 1) or "from a.b import c" (group 2; relative imports,
// "from . import x", do not match).
var importedRe = regexp.MustCompile(`(?m)^[ \t]*(?:import[ \t]+([A-Za-z_][\w.]*(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*(?:[ \t]+as[ \t]+\w+)?)*)|from[ \t]+([A-Za-z_][\w.]*)[ \t]+import\b)`)

// Modules returns the top-level Python modules c imports, sorted: those of
// its import statements (import_statement), its canonical solution and its
// test suite. A machine whose interpreter lacks one fails c's tests
// whatever the code (see [Runner.Probe]).
func (c *Class) Modules() []string {
	var out []string
	for _, src := range append(slices.Clone(c.Imports), c.Canonical, c.Test) {
		for _, m := range importedRe.FindAllStringSubmatch(src, -1) {
			names := []string{m[2]}
			if m[1] != "" {
				names = strings.Split(m[1], ",")
			}
			for _, n := range names {
				n, _, _ = strings.Cut(strings.TrimSpace(n), " ")
				n, _, _ = strings.Cut(n, "\t")
				n, _, _ = strings.Cut(n, ".")
				if n != "" && !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// DebianPackages maps the third-party modules the shipped classes import
// to the Debian packages that provide them.
var DebianPackages = map[string]string{
	"PIL": "python3-pil", "PyPDF2": "python3-pypdf2", "bs4": "python3-bs4", "docx": "python3-docx",
	"gensim": "python3-gensim", "nltk": "python3-nltk", "numpy": "python3-numpy",
	"openpyxl": "python3-openpyxl", "pandas": "python3-pandas", "reportlab": "python3-reportlab",
}

// Interpreter is what [Runner.Probe] found of the Runner's interpreter, run
// in the sandbox as the classes' programs are.
type Interpreter struct {
	// Version is the interpreter's sys.version.
	Version string
	// Missing are the modules asked for that it cannot find, sorted.
	Missing []string
	// Fingerprint is the hex SHA-256 of the version and, per module found,
	// where it lives and its file's size and modification time: it
	// changes when the interpreter or a library the classes import is
	// replaced, so that outcomes stored under it are not reused then.
	Fingerprint string
}

// probeProgram prints, as one JSON line, sys.version and, per module of
// the list formatted into it, where importlib finds it (null: nowhere),
// without importing it (some take seconds to import).
const probeProgram = `import importlib.util, json, os, sys
found = {}
for name in %s:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        found[name] = None
        continue
    where = spec.origin if spec.origin not in (None, "built-in", "frozen") else ""
    if not where and spec.submodule_search_locations:
        where = list(spec.submodule_search_locations)[0]
    try:
        st = os.stat(where) if where else None
    except OSError:
        st = None
    found[name] = [where or str(spec.origin), st.st_size if st else 0, st.st_mtime_ns if st else 0]
print(json.dumps({"version": sys.version, "modules": found}))
`

// Probe runs one program in the sandbox that asks the interpreter where it
// would find each of modules (importlib.util.find_spec; nothing is
// imported) and returns what it found. A module it cannot find is in
// Missing; an error means the program itself could not run.
func (r *Runner) Probe(ctx context.Context, modules []string) (Interpreter, error) {
	names, err := json.Marshal(modules)
	if err != nil {
		return Interpreter{}, err
	}
	if modules == nil {
		names = []byte("[]")
	}
	res, err := r.sb.Run(ctx, sandbox.Program{TaskID: "probe", Code: fmt.Sprintf(probeProgram, names), NoCache: true})
	if err != nil {
		return Interpreter{}, fmt.Errorf("classeval runner: probing %s: %w", r.cfg.Python, err)
	}
	var out struct {
		Version string                      `json:"version"`
		Modules map[string]*json.RawMessage `json:"modules"`
	}
	if !res.OK() || json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &out) != nil {
		return Interpreter{}, fmt.Errorf("classeval runner: probing %s: the probe program failed (%s): %s", r.cfg.Python, res.Describe(), tail(strings.TrimSpace(res.Stderr), 400))
	}
	in := Interpreter{Version: out.Version}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", r.cfg.Python, out.Version)
	for _, m := range slices.Compact(slices.Sorted(slices.Values(modules))) {
		v := out.Modules[m]
		if v == nil || string(*v) == "null" {
			in.Missing = append(in.Missing, m)
			continue
		}
		fmt.Fprintf(h, "%s=%s\x00", m, *v)
	}
	in.Fingerprint = hex.EncodeToString(h.Sum(nil))
	return in, nil
}
