package classeval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/troupe-dev/troupe/envs/classeval/internal/suite"
	"github.com/troupe-dev/troupe/internal/atomicfile"
	"github.com/troupe-dev/troupe/internal/codetokens"
	"github.com/troupe-dev/troupe/internal/sandbox"
)

// suiteBackend binds the env's backend to package internal/suite: the
// dataset and outputs it loaded, extracted once, and one Runner (whose
// memo of sandbox results every env instance of the process shares).
type suiteBackend struct {
	ds    *suite.Dataset
	out   *suite.Outputs
	run   *suite.Runner
	tasks []classTask
	cls   []*suite.Class
	// recs[model][task][method] are the recordings in replay order.
	recs map[string][][][]recording
	// Excluded lists the dataset's classes left out, with the reason.
	excluded []suite.Exclusion
	// cacheDir, when set, keeps every run's outcome on disk (see
	// Params.CacheDir).
	cacheDir string
	// interp is what the runner's interpreter offers the kept classes;
	// its fingerprint is part of every cache key.
	interp suite.Interpreter
	// userClasses marks a dataset other than the shipped one: its
	// canonical solutions were never checked (see CanonicalFailure).
	userClasses bool
}

// backends holds one backend per (dataset, outputs directory): loading and
// extracting is done once per process, and the sandbox memo is shared by
// every worker's env.
var backends struct {
	mu sync.Mutex
	m  map[[3]string]*suiteBackend
}

// openBackend returns the backend of a dataset file and an outputs
// directory ("" = the shipped ones), with its outcomes cached in cacheDir
// ("" = in memory only).
func openBackend(dataset, outputsDir, cacheDir string) (backend, error) {
	backends.mu.Lock()
	defer backends.mu.Unlock()
	key := [3]string{dataset, outputsDir, cacheDir}
	if b := backends.m[key]; b != nil {
		return b, nil
	}
	b, err := loadSuiteBackend(dataset, outputsDir)
	if err != nil {
		return nil, err
	}
	if cacheDir != "" {
		if err := os.MkdirAll(cacheDir, 0o755); err != nil {
			return nil, fmt.Errorf("params: key \"cache_dir\": %w", err)
		}
		b.cacheDir = cacheDir
	}
	if backends.m == nil {
		backends.m = map[[3]string]*suiteBackend{}
	}
	backends.m[key] = b
	return b, nil
}

func loadSuiteBackend(dataset, outputsDir string) (*suiteBackend, error) {
	b := &suiteBackend{}
	var err error
	switch {
	case dataset == "" && outputsDir == "":
		if b.ds, err = suite.Embedded(); err == nil {
			b.out, err = suite.EmbeddedOutputs()
		}
		if err == nil {
			b.excluded, err = suite.EmbeddedExclusions()
		}
	case dataset != "" && outputsDir == "":
		return nil, errors.New(`params: key "outputs_dir": needed with "dataset" (the completions of the dataset's classes, in ClassEval's outputs layout)`)
	default:
		if dataset == "" {
			// The shipped classes with a user's completions: the shipped
			// classes' exclusions hold.
			if b.ds, err = suite.Embedded(); err == nil {
				b.excluded, err = suite.EmbeddedExclusions()
			}
		} else if b.ds, err = suite.LoadDataset(dataset); err != nil {
			err = fmt.Errorf("params: key \"dataset\": %w", err)
		} else {
			b.userClasses = true
		}
		if err == nil {
			if b.out, err = suite.LoadOutputs(outputsDir, b.ds); err != nil {
				err = fmt.Errorf("params: key \"outputs_dir\": %w", err)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if b.run, err = sharedRunner(); err != nil {
		return nil, err
	}
	skip := map[string]bool{}
	for _, x := range b.excluded {
		skip[x.Class] = true
	}
	var modules []string
	var imports [][]string // per kept class, its modules
	for _, c := range b.ds.Classes {
		if skip[c.ID] {
			continue
		}
		t := classTask{ID: c.ID, Name: c.Name, Skeleton: c.Skeleton}
		for _, m := range c.Methods {
			t.Methods = append(t.Methods, classMethod{Name: m.Name, Deps: m.MethodDeps, Examples: m.ExampleCount})
		}
		b.tasks = append(b.tasks, t)
		b.cls = append(b.cls, c)
		imports = append(imports, c.Modules())
		modules = append(modules, imports[len(imports)-1]...)
	}
	if len(b.tasks) == 0 {
		return nil, fmt.Errorf("params: key \"dataset\": %s has no class to play", b.ds.Source)
	}
	// Which of the modules the classes import the sandbox's interpreter
	// lacks: a class that imports one fails its tests whatever the code.
	if b.interp, err = b.run.Probe(context.Background(), modules); err != nil {
		return nil, err
	}
	for t, mods := range imports {
		for _, m := range mods {
			if slices.Contains(b.interp.Missing, m) {
				b.tasks[t].Missing = append(b.tasks[t].Missing, m)
			}
		}
	}
	b.recs = map[string][][][]recording{}
	for _, model := range b.out.Models() {
		perTask := make([][][]recording, len(b.cls))
		for t, c := range b.cls {
			perTask[t] = make([][]recording, len(c.Methods))
			for j, m := range c.Methods {
				for _, mode := range suite.Modes {
					for _, comp := range b.out.Completions(model, mode, c, m) {
						perTask[t][j] = append(perTask[t][j], toRecording(comp))
					}
				}
			}
		}
		b.recs[model] = perTask
	}
	return b, nil
}

// toRecording converts a suite completion.
func toRecording(c suite.Completion) recording {
	src := string(c.Mode)
	if c.Mode == suite.ModeClassSampled {
		src = fmt.Sprintf("%s#%d", c.Mode, c.Sample)
	}
	code := c.Source
	if len(c.Helpers) > 0 {
		code += "\n" + strings.Join(c.Helpers, "\n")
	}
	return recording{Source: src, Code: code, OK: c.Status != suite.NotExtracted, CompletionTokens: c.ReplyTokens, impl: c.Impl(), status: c.Status}
}

var runner struct {
	once sync.Once
	r    *suite.Runner
	err  error
}

// sharedRunner returns the process's Runner.
func sharedRunner() (*suite.Runner, error) {
	runner.once.Do(func() { runner.r, runner.err = suite.NewRunner(suite.RunnerConfig{}) })
	return runner.r, runner.err
}

func (b *suiteBackend) Tasks() []classTask { return b.tasks }

// taskRecordings returns model's recordings of every method of task t.
func (b *suiteBackend) taskRecordings(model string, t int) [][]recording {
	if byTask := b.recs[model]; byTask != nil {
		return byTask[t]
	}
	return nil
}

func (b *suiteBackend) Recordings(model string, t, m int) []recording {
	if byTask := b.recs[model]; byTask != nil {
		return byTask[t][m]
	}
	return nil
}

func (b *suiteBackend) ClassSamples(model string, t int) []string {
	var out []string
	for _, byMethod := range b.taskRecordings(model, t) {
		for _, r := range byMethod {
			if isClassSample(r.Source) && !slices.Contains(out, r.Source) {
				out = append(out, r.Source)
			}
		}
	}
	return out
}

func (b *suiteBackend) ClassSampleTokens(model string, t int, source string) int {
	n := 0
	for _, byMethod := range b.taskRecordings(model, t) {
		for _, r := range byMethod {
			if r.Source == source {
				n = max(n, r.CompletionTokens)
			}
		}
	}
	return n
}

func (b *suiteBackend) HasMode(model, mode string) bool {
	return b.out.HasMode(model, suite.Mode(mode))
}

func impls(recs []*recording) []suite.Impl {
	out := make([]suite.Impl, len(recs))
	for i, r := range recs {
		if r != nil {
			out[i] = r.impl
		}
	}
	return out
}

// addrRe matches an object address in a Python repr.
var addrRe = regexp.MustCompile(` at 0x[0-9a-fA-F]+`)

// cacheVersion changes the cache's keys when what is stored changes.
const cacheVersion = "classeval-cache-2"

// cached returns the outcome stored for program p in the cache directory,
// or computes it with run and stores it. The key is the SHA-256 of the
// program (what the sandbox runs, which holds the class, the code and the
// tests), of the kind of outcome and of the interpreter's fingerprint
// (its version and the libraries the classes import: another Python or
// another numpy is another key); outcomes are deterministic (the suite's
// durations come from its shipped timings), so a stored one is the one a
// run would give.
func cached[T any](b *suiteBackend, kind string, p sandbox.Program, run func() (T, error)) (T, error) {
	if b.cacheDir == "" {
		return run()
	}
	h := sha256.Sum256([]byte(cacheVersion + "\x00" + b.interp.Fingerprint + "\x00" + kind + "\x00" + p.TaskID + "\x00" + p.Code + "\x00" + p.Test))
	key := hex.EncodeToString(h[:])
	path := filepath.Join(b.cacheDir, key[:2], key+".json")
	var v T
	if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &v) == nil {
		return v, nil
	}
	v, err := run()
	if err != nil {
		return v, err
	}
	data, err := json.Marshal(v)
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = atomicfile.WriteFile(path, data, 0o644)
		}
	}
	if err != nil {
		return v, fmt.Errorf("cache_dir: %w", err)
	}
	return v, nil
}

func (b *suiteBackend) RunExamples(t, m int, recs []*recording) (exampleRun, error) {
	c := b.cls[t]
	is := impls(recs)
	return cached(b, "examples", b.run.ExamplesProgram(c, c.Methods[m], is), func() (exampleRun, error) {
		r, err := b.run.RunExamples(context.Background(), c, c.Methods[m], is)
		if err != nil {
			return exampleRun{}, err
		}
		// Object addresses vary between processes; the report the agent
		// reads (and whose tokens a rewrite's prompt pays) must not.
		out := addrRe.ReplaceAllString(r.Report, " at 0x…")
		if r.Pass {
			out = fmt.Sprintf("%d examples, all passed", r.Attempted)
		}
		return exampleRun{Pass: r.Pass, Output: out, DurationS: r.DurationS, Kinds: [4]int{r.Mismatches, r.Cosmetic, r.CodeErrors, r.ExampleErrors}}, nil
	})
}

func (b *suiteBackend) Score(t int, recs []*recording) (classScore, error) {
	return b.scoreImpls(b.cls[t], impls(recs))
}

// scoreImpls runs c's suite on the class assembled from is, through the
// cache.
func (b *suiteBackend) scoreImpls(c *suite.Class, is []suite.Impl) (classScore, error) {
	return cached(b, "tests", b.run.TestsProgram(c, is), func() (classScore, error) { return b.score(c, is) })
}

func (b *suiteBackend) score(c *suite.Class, is []suite.Impl) (classScore, error) {
	r, err := b.run.RunTests(context.Background(), c, is)
	if err != nil {
		return classScore{}, err
	}
	s := classScore{MethodPass: r.MethodPass, ClassPass: r.ClassPass, Detail: make([]string, len(c.Methods))}
	for j, m := range c.Methods {
		s.Detail[j] = "passed"
		for _, cr := range r.Cases {
			if cr.Name == m.TestCase && !cr.Pass {
				s.Detail[j] = cr.Detail
			}
		}
		if m.TestCase == "" {
			s.Detail[j] = "scored by the class-level TestCases"
		}
		if !s.MethodPass[j] && s.Detail[j] == "passed" {
			s.Detail[j] = "failed (" + r.Program + ")"
		}
	}
	return s, nil
}

func (b *suiteBackend) Tokens(text string) int { return codetokens.Count(text) }

// CanonicalFailure runs the suite of a user's class t on its canonical
// solution (once; stored in the cache directory like every outcome) and
// says which TestCases fail, or "" when all pass. The shipped classes were
// checked on the reference machine (suite.EmbeddedExclusions left out the
// 4 that fail), so for them it runs nothing and returns "".
func (b *suiteBackend) CanonicalFailure(t int) (string, error) {
	if !b.userClasses {
		return "", nil
	}
	c := b.cls[t]
	s, err := b.scoreImpls(c, c.CanonicalImpls())
	if err != nil || s.ClassPass {
		return "", err
	}
	var bad []string
	for j, ok := range s.MethodPass {
		if !ok {
			bad = append(bad, c.Methods[j].Name+": "+s.Detail[j])
		}
	}
	if len(bad) == 0 {
		bad = append(bad, "a class-level TestCase")
	}
	return "fails " + strings.Join(bad, "; "), nil
}

// missingModulesError says which classes to play import modules the
// sandbox's interpreter lacks.
type missingModulesError struct {
	// classes[module] are the IDs of the classes that import it.
	classes map[string][]string
	played  int // the number of classes to play
}

func (e *missingModulesError) Error() string {
	var mods, pkgs, other []string
	n := map[string]bool{}
	for _, m := range slices.Sorted(maps.Keys(e.classes)) {
		ids := e.classes[m]
		for _, id := range ids {
			n[id] = true
		}
		if len(ids) > 4 {
			ids = append(ids[:4:4], "…")
		}
		mods = append(mods, fmt.Sprintf("%s (%s)", m, strings.Join(ids, ", ")))
		if p, ok := suite.DebianPackages[m]; ok {
			pkgs = append(pkgs, p)
		} else {
			other = append(other, m)
		}
	}
	var how []string
	if len(pkgs) > 0 {
		how = append(how, "apt-get install "+strings.Join(pkgs, " "))
	}
	if len(other) > 0 {
		how = append(how, "provide "+strings.Join(other, ", ")+" to "+suite.DefaultPython)
	}
	return fmt.Sprintf("env classeval: %s (in the sandbox) cannot find the Python modules that %d of the %d classes to play import: %s; their tests would fail whatever the code, and every score would change. Install them (%s), or leave those classes out (params key \"classes\")",
		suite.DefaultPython, len(n), e.played, strings.Join(mods, ", "), strings.Join(how, "; and "))
}

// missingModules returns a *missingModulesError if a task of play (sorted
// indexes into tasks) imports a module the interpreter lacks, else nil.
func missingModules(tasks []classTask, play []int) error {
	e := &missingModulesError{classes: map[string][]string{}, played: len(play)}
	for _, t := range play {
		for _, m := range tasks[t].Missing {
			e.classes[m] = append(e.classes[m], tasks[t].ID)
		}
	}
	if len(e.classes) == 0 {
		return nil
	}
	return e
}

// canonicalFailures checks, in parallel, that the canonical solution of
// every task of play passes its class's tests (be.CanonicalFailure), and
// returns an error naming the classes whose do not, with how, and the
// "classes" setting that plays the others; nil when all pass.
func canonicalFailures(be backend, tasks []classTask, play []int) error {
	why := make([]string, len(play))
	errs := make([]error, len(play))
	var wg sync.WaitGroup
	for k, t := range play {
		wg.Go(func() { why[k], errs[k] = be.CanonicalFailure(t) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("env classeval: checking the canonical solutions: %w", err)
	}
	var bad, good []string
	for k, t := range play {
		if why[k] == "" {
			good = append(good, strconv.Quote(tasks[t].ID))
			continue
		}
		w := why[k]
		if len(w) > 300 {
			w = w[:300] + "…"
		}
		bad = append(bad, tasks[t].ID+" ("+w+")")
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return fmt.Errorf("env classeval: the canonical solutions of %d of the %d classes to play fail their own tests in the sandbox, so no code could pass them: %s; fix the dataset, or play the others: --set 'env.params.classes=[%s]'",
		len(bad), len(play), strings.Join(bad, "; "), strings.Join(good, ","))
}
