package suite

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/troupe-dev/troupe/internal/sandbox"
)

// RunnerConfig configures a [Runner]. The zero value of a field selects its
// default.
type RunnerConfig struct {
	// Python is the interpreter. Default [DefaultPython].
	Python string
	// TestCPUSeconds bounds the CPU time of each test method (and of each
	// docstring example run), after which it fails as timed out and the
	// rest of its TestCase is skipped. CPU time, not wall time, so that a
	// loaded machine does not change outcomes. Default 1.
	TestCPUSeconds float64
	// WallTimeout bounds a whole program (all TestCases of a class) in
	// wall time; ProgramCPU bounds its CPU time. A program stopped by
	// either keeps the results it streamed; the rest fail. The wall bound
	// only catches programs that block (sleep, wait): it is generous so
	// that a heavily loaded machine does not change results. Defaults
	// 300 s and 60 s.
	WallTimeout time.Duration
	ProgramCPU  time.Duration
	// MemoryBytes bounds the address space. Default 2 GiB (numpy, pandas
	// and gensim map a lot).
	MemoryBytes uint64
	// Parallel bounds the programs run at once. Default: the sandbox's.
	Parallel int
}

// DefaultPython is the interpreter a Runner runs unless told otherwise.
const DefaultPython = "/usr/bin/python3"

func (c RunnerConfig) withDefaults() RunnerConfig {
	if c.Python == "" {
		c.Python = DefaultPython
	}
	if c.TestCPUSeconds == 0 {
		c.TestCPUSeconds = 1
	}
	if c.WallTimeout == 0 {
		c.WallTimeout = 300 * time.Second
	}
	if c.ProgramCPU == 0 {
		c.ProgramCPU = 60 * time.Second
	}
	if c.MemoryBytes == 0 {
		c.MemoryBytes = 2 << 30
	}
	return c
}

// A Runner runs classes' tests and examples in the sandbox, memoizing
// results by the hash of the program. It is safe for concurrent use.
type Runner struct {
	cfg  RunnerConfig
	sb   *sandbox.Sandbox
	mu   sync.Mutex
	memo map[[32]byte]*memoEntry
	tim  Timings
}

type memoEntry struct {
	once sync.Once
	res  sandbox.Result
	err  error
}

// NewRunner returns a Runner. The interpreter runs with PYTHONHASHSEED=0,
// TZ=UTC (through /usr/bin/env, as the sandbox clears the environment) and
// OPENBLAS_NUM_THREADS=1; every program starts with clockLine, so that
// its code reads a clock that starts at ClockEpoch and moves by a count
// of readings, not with the day or the machine.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	cfg = cfg.withDefaults()
	sb, err := sandbox.New(sandbox.Config{
		Interpreter: []string{"/usr/bin/env", "PYTHONHASHSEED=0", "TZ=UTC", "OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1", cfg.Python, "-s"},
		WallTimeout: cfg.WallTimeout,
		CPUTime:     cfg.ProgramCPU,
		MemoryBytes: cfg.MemoryBytes,
		Parallel:    cfg.Parallel,
		Processes:   64,
		OutputBytes: 256 << 10,
		// The Runner memoizes every result itself (bounded to what it
		// parses), so the sandbox's cache would only hold copies.
		CacheEntries: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("classeval runner: %w", err)
	}
	tim, err := EmbeddedTimings()
	if err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg, sb: sb, memo: map[[32]byte]*memoEntry{}, tim: tim}, nil
}

// run runs a program once per distinct (code, test) pair.
func (r *Runner) run(ctx context.Context, p sandbox.Program) (sandbox.Result, error) {
	h := sha256.Sum256([]byte(p.TaskID + "\x00" + p.Code + "\x00" + p.Test))
	r.mu.Lock()
	e := r.memo[h]
	if e == nil {
		e = &memoEntry{}
		r.memo[h] = e
	}
	r.mu.Unlock()
	e.once.Do(func() {
		e.res, e.err = r.sb.Run(ctx, p)
		// Keep only what the parsers read: the result lines and the end of
		// stderr.
		var keep []string
		for _, l := range strings.Split(e.res.Stdout, "\n") {
			if strings.HasPrefix(l, markPrefix) {
				keep = append(keep, l)
			}
		}
		e.res.Stdout, e.res.Stderr = strings.Join(keep, "\n"), tail(e.res.Stderr, 4000)
	})
	if e.err != nil {
		// Do not memoize a failure of the sandbox itself (e.g. a
		// cancelled context).
		r.mu.Lock()
		if r.memo[h] == e {
			delete(r.memo, h)
		}
		r.mu.Unlock()
	}
	return e.res, e.err
}

// CaseResult is the outcome of one TestCase.
type CaseResult struct {
	Name string
	// Tests, Failures and Errors count its test methods (Errors include
	// timeouts); Pass is true when it ran and none failed.
	Tests, Failures, Errors int
	Pass                    bool
	// Detail says what went wrong, briefly ("" when Pass): the first
	// failure's last line, "timeout", or why it did not run.
	Detail string
}

// TestResult is the outcome of a class's full unittest suite.
type TestResult struct {
	// Cases has one entry per Class.TestCases, in that order.
	Cases []CaseResult
	// MethodPass[i] reports whether Methods[i]'s TestCase passed; a method
	// without one (TestCase "") passes when every ClassTestCase passed.
	MethodPass []bool
	// ClassPass reports that every TestCase passed.
	ClassPass bool
	// Program describes how the program ended ("exit 0", "timeout",
	// "exit 1", …); Stderr is the tail of its standard error. Texts are
	// sanitized of object addresses and temporary paths, so that two runs
	// of the same program give the same result.
	Program string
	Stderr  string
	// DurationS is the run's deterministic duration in seconds (see the
	// package documentation).
	DurationS float64
}

// PassRate returns the fraction of methods that passed.
func (t TestResult) PassRate() float64 {
	n := 0
	for _, p := range t.MethodPass {
		if p {
			n++
		}
	}
	return float64(n) / float64(max(1, len(t.MethodPass)))
}

// harness is appended to the class and its tests: it runs each TestCase
// named in CASES (base64 JSON) with a CPU-time alarm per test, random
// seeded before each test, the tests' own output discarded, and prints one
// line MARK+json per TestCase as soon as it is done. time.sleep does not
// sleep: the seconds asked for count against the same per-test limit
// (sleepBudget), so code that sleeps neither blocks the sandbox nor makes
// the outcome depend on the machine.
const testHarness = `
import base64 as _b64, io as _io, json as _json, random as _random, re as _re, signal as _signal, sys as _sys, unittest as _unittest
_MARK = %q
_CASES = _json.loads(_b64.b64decode(%q))
_LIMIT = %v
class _Timeout(BaseException):
    pass
def _alarm(signum, frame):
    raise _Timeout("test exceeded %%.1f s of CPU time" %% _LIMIT)
_signal.signal(_signal.SIGPROF, _alarm)
` + sleepBudget + `class _Result(_unittest.TestResult):
    timed_out = False
    def startTest(self, test):
        _random.seed(0)
        _slept[0] = 0.0
        _signal.setitimer(_signal.ITIMER_PROF, _LIMIT)
        super().startTest(test)
    def stopTest(self, test):
        _signal.setitimer(_signal.ITIMER_PROF, 0)
        super().stopTest(test)
    def addError(self, test, err):
        if err[0] is _Timeout:
            self.timed_out = True
            self.shouldStop = True
        super().addError(test, err)
def _summary(tb):
    # The exception line of a traceback and what follows it, without
    # decoration: "AssertionError: 1 != 2", "LookupError: Resource punkt not found. …".
    lines = [l.strip() for l in tb.strip().splitlines()]
    start = 0
    for i, l in enumerate(lines):
        if _re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning|Timeout)\b", l):
            start = i
    keep = [_re.sub(r"\x1b\[[0-9;]*m", "", l) for l in lines[start:] if l and l.strip("*") != ""]
    return " ".join(keep)[:240] or "failed"
_out = _sys.stdout
for _name in _CASES:
    _cls = globals().get(_name)
    if not (isinstance(_cls, type) and issubclass(_cls, _unittest.TestCase)):
        print(_MARK + _json.dumps({"name": _name, "detail": "not a TestCase"}), file=_out, flush=True)
        continue
    _res = _Result()
    _sink = _io.StringIO()
    _sys.stdout = _sys.stderr = _sink
    try:
        _unittest.defaultTestLoader.loadTestsFromTestCase(_cls).run(_res)
    except BaseException as _e:
        _res.errors.append((None, "harness: %%r" %% (_e,)))
    finally:
        _signal.setitimer(_signal.ITIMER_PROF, 0)
        _sys.stdout, _sys.stderr = _out, _sys.__stderr__
    _detail = ""
    if _res.timed_out:
        _detail = "timeout"
    elif _res.failures or _res.errors:
        _detail = _summary((_res.failures + _res.errors)[0][1])
    print(_MARK + _json.dumps({"name": _name, "tests": _res.testsRun, "failures": len(_res.failures),
        "errors": len(_res.errors), "pass": _res.wasSuccessful() and _res.testsRun >= 0, "detail": _detail}), file=_out, flush=True)
`

// sleepBudget replaces time.sleep (in the time module, in the program's
// copy of it that clockSource gives, and in any global name bound to it, as
// `from time import sleep` binds one) by a function that does not sleep
// but adds the seconds to _slept[0], moves the program's clock by as
// much, and raises _Timeout once they exceed _LIMIT. Each harness
// includes it after defining _Timeout and _LIMIT.
const sleepBudget = `import time as _time
_real_sleep = _time.sleep
_slept = [0.0]
def _budget_sleep(seconds):
    _slept[0] += max(0.0, float(seconds))
    if _slept[0] > _LIMIT:
        raise _Timeout("slept %%.1f s, more than the %%.1f s a test may take" %% (_slept[0], _LIMIT))
    getattr(_time, "_troupe_advance", lambda s: None)(max(0.0, float(seconds)))
_time.sleep = __import__("sys").modules["time"].sleep = _budget_sleep
for _k, _v in list(globals().items()):
    if _v is _real_sleep:
        globals()[_k] = _budget_sleep
`

// testPrelude comes before a class's tests: a test module that ends with
// `unittest.main()` would otherwise run every test and exit before the
// harness does.
const testPrelude = "import unittest as _unittest_module\n_unittest_module.main = lambda *args, **kwargs: None\n\n"

// markPrefix starts every result line of the harnesses.
const markPrefix = "@@classeval-"

// mark returns a marker derived from the program, so that the program's
// own output cannot forge result lines by accident.
func mark(code string) string {
	h := sha256.Sum256([]byte(code))
	return markPrefix + hex.EncodeToString(h[:6]) + " "
}

// programCode is the code part of every program the Runner builds: the
// clock line, then impls' assembly of c.
func programCode(c *Class, impls []Impl) string {
	return clockLine + c.Assemble(impls)
}

// TestsProgram returns the sandbox program that runs impls' assembly of c
// against c's full unittest suite.
func (r *Runner) TestsProgram(c *Class, impls []Impl) sandbox.Program {
	code := programCode(c, impls)
	cases, _ := json.Marshal(c.TestCases)
	m := mark(code + c.Test)
	test := testPrelude + c.Test + "\n\n" + fmt.Sprintf(testHarness, m, base64.StdEncoding.EncodeToString(cases), r.cfg.TestCPUSeconds)
	return sandbox.Program{TaskID: c.ID, Code: code, Test: test}
}

// RunTests runs c's full unittest suite on the class assembled from impls
// (see [Class.Assemble]). A class that does not compile, hangs, crashes
// or times out fails what did not pass; the error is non-nil only when
// the sandbox could not run the program at all.
func (r *Runner) RunTests(ctx context.Context, c *Class, impls []Impl) (TestResult, error) {
	p := r.TestsProgram(c, impls)
	res, err := r.run(ctx, p)
	if err != nil {
		return TestResult{}, fmt.Errorf("classeval %s: %w", c.ID, err)
	}
	m := mark(p.Code + c.Test)
	got := map[string]CaseResult{}
	for _, l := range strings.Split(res.Stdout, "\n") {
		payload, ok := strings.CutPrefix(l, m)
		if !ok {
			continue
		}
		var cr struct {
			Name                    string
			Tests, Failures, Errors int
			Pass                    bool
			Detail                  string
		}
		if json.Unmarshal([]byte(payload), &cr) == nil {
			got[cr.Name] = CaseResult{Name: cr.Name, Tests: cr.Tests, Failures: cr.Failures, Errors: cr.Errors, Pass: cr.Pass, Detail: sanitize(cr.Detail)}
		}
	}
	out := TestResult{Program: res.Describe(), Stderr: sanitize(tail(res.Stderr, 2000))}
	out.ClassPass = true
	byName := map[string]bool{}
	for _, n := range c.TestCases {
		cr, ok := got[n]
		if !ok {
			cr = CaseResult{Name: n, Detail: sanitize("did not run: " + programEnd(res))}
		}
		byName[n] = cr.Pass
		out.ClassPass = out.ClassPass && cr.Pass
		out.Cases = append(out.Cases, cr)
	}
	classCases := true
	for _, n := range c.ClassTestCases {
		classCases = classCases && byName[n]
	}
	for _, meth := range c.Methods {
		if meth.TestCase == "" {
			out.MethodPass = append(out.MethodPass, classCases && len(c.ClassTestCases) > 0)
		} else {
			out.MethodPass = append(out.MethodPass, byName[meth.TestCase])
		}
	}
	out.DurationS = r.tim.tests(c.ID)
	for _, cr := range out.Cases {
		if cr.Detail == "timeout" {
			out.DurationS += r.cfg.TestCPUSeconds
		}
	}
	switch res.Stop {
	case sandbox.StopTimeout:
		out.DurationS = r.cfg.WallTimeout.Seconds()
	case sandbox.StopCPU:
		out.DurationS = r.cfg.ProgramCPU.Seconds()
	}
	return out, nil
}

// programEnd says how a program ended, with the last line of its stderr
// when it failed (a SyntaxError, an ImportError, …).
func programEnd(res sandbox.Result) string {
	d := res.Describe()
	if s := strings.TrimSpace(res.Stderr); s != "" {
		lines := strings.Split(s, "\n")
		d += ": " + lines[len(lines)-1]
	}
	return d
}

var (
	addrRe = regexp.MustCompile(`0x[0-9a-fA-F]{6,}`)
	pathRe = regexp.MustCompile(`(?:/[^\s"':]+)?/main\.py`)
	tmpRe  = regexp.MustCompile(`/tmp/[^\s"':]+`)
)

// sanitize removes what differs between two runs of the same program:
// object addresses and the run's temporary paths.
func sanitize(s string) string {
	s = addrRe.ReplaceAllString(s, "0x…")
	s = pathRe.ReplaceAllString(s, "main.py")
	return tmpRe.ReplaceAllString(s, "/tmp/…")
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// ExampleResult is the outcome of running one method's docstring examples.
type ExampleResult struct {
	// Attempted and Failed count the examples (doctest's counts); a method
	// without examples attempts none and passes.
	Attempted, Failed int
	// Mismatches, Cosmetic, CodeErrors and ExampleErrors count the failed
	// examples by kind: a wrong output; the right value printed otherwise
	// than the docstring writes it ("3.0" for "3.00", a quoted string for
	// a bare one, equal literals); an exception raised in the class's
	// code; an exception raised by the example itself, outside the class's
	// code (a name the docstring never defines, a file it assumes, a
	// syntax error in the docstring). A timeout or a program that did not
	// run counts in none of them.
	Mismatches, Cosmetic, CodeErrors, ExampleErrors int
	// Timeout reports that the examples ran out of CPU time.
	Timeout bool
	// Pass reports that the program ran and no example failed.
	Pass bool
	// Report is what an agent reads: doctest's report of the failures, or
	// how the program failed (bounded to 2000 bytes).
	Report string
	// DurationS is the run's deterministic duration in seconds.
	DurationS float64
}

const exampleHarness = `
import base64 as _b64, doctest as _doctest, io as _io, json as _json, random as _random, signal as _signal, sys as _sys
_MARK = %q
_SRC = _b64.b64decode(%q).decode()
_LIMIT = %v
class _Timeout(KeyboardInterrupt):  # doctest re-raises KeyboardInterrupt only
    pass
def _alarm(signum, frame):
    raise _Timeout("examples exceeded %%.1f s of CPU time" %% _LIMIT)
_signal.signal(_signal.SIGPROF, _alarm)
` + sleepBudget + `_random.seed(0)
_out = _sys.stdout
_rep = _io.StringIO()
_SKEL = _b64.b64decode(%q).decode()
_CLASS = %q
_CODE_LINES = %d
` + exampleSetup + `import traceback as _traceback
def _value(text):
    # The Python value a printed output stands for: a literal, else the
    # text itself (a bare string is what print shows of a str).
    text = text.strip()
    try:
        return _ast.literal_eval(text)
    except Exception:
        return text
def _same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b
class _Runner(_doctest.DocTestRunner):
    # Counts the failures by kind: a wrong output; a right value printed
    # otherwise than the docstring writes it (3.0 for "3.00", 'a' for "a",
    # a list for the tuple it equals); an exception raised in the class's
    # code (a frame of it in the traceback); an exception raised by the
    # example itself (NameError, SyntaxError, …).
    kinds = {"mismatch": 0, "cosmetic": 0, "code_error": 0, "example_error": 0}
    def report_failure(self, out, test, example, got):
        cosmetic = False
        try:
            cosmetic = bool(example.want.strip()) and bool(got.strip()) and _same(_value(example.want), _value(got))
        except Exception:
            pass
        self.kinds["cosmetic" if cosmetic else "mismatch"] += 1
        super().report_failure(out, test, example, got)
    def report_unexpected_exception(self, out, test, example, exc_info):
        frames = _traceback.extract_tb(exc_info[2])
        code = any(f.filename.endswith("main.py") and f.lineno <= _CODE_LINES for f in frames)
        self.kinds["code_error" if code else "example_error"] += 1
        super().report_unexpected_exception(out, test, example, exc_info)
try:
    _test = _doctest.DocTestParser().get_doctest(_SRC, dict(globals()), %q, "docstring", 0)
    _runner = _Runner(optionflags=_doctest.ELLIPSIS | _doctest.NORMALIZE_WHITESPACE, verbose=False)
    _signal.setitimer(_signal.ITIMER_PROF, _LIMIT)
    _setup(_test, _rep.write)
    _r = _runner.run(_test, out=_rep.write)
    _signal.setitimer(_signal.ITIMER_PROF, 0)
    _res = {"attempted": _r.attempted, "failed": _r.failed, "kinds": _runner.kinds, "report": _rep.getvalue()[-2000:]}
except BaseException as _e:
    _signal.setitimer(_signal.ITIMER_PROF, 0)
    _res = {"attempted": 0, "failed": 1, "timeout": isinstance(_e, _Timeout),
        "report": (_rep.getvalue() + "\nexamples could not run: %%r" %% (_e,))[-2000:]}
print(_MARK + _json.dumps(_res), file=_out, flush=True)
`

// exampleSetup defines _setup(test, write), which binds the names a
// method's examples use before any of its examples assigns them, as a
// developer running the examples would: ClassEval's docstrings often call
// an instance built in another docstring of the class (">>> system =
// AssessmentSystem()" in one method, "system.add_student(…)" in the next)
// or in none. For each such name, the first example in the class's
// docstrings (the skeleton's: the class's, then each method's, in order)
// that assigns it alone ("NAME = EXPR") runs first, with the names it
// needs bound the same way; a name that no docstring assigns and that the
// examples use as an object ("NAME.attr") is bound to an instance of the
// class built without arguments, when the class allows that. What was
// bound, and what failed, heads the report. The setup runs on the code
// under test, under the examples' CPU limit. It goes through fmt.Sprintf
// with the harness: no % in it.
const exampleSetup = `import ast as _ast, builtins as _builtins
def _assignments():
    out = {}
    try:
        tree = _ast.parse(_SKEL)
    except SyntaxError:
        return out
    for node in _ast.walk(tree):
        if not isinstance(node, (_ast.ClassDef, _ast.FunctionDef, _ast.AsyncFunctionDef)):
            continue
        doc = _ast.get_docstring(node, clean=True)
        if not doc:
            continue
        try:
            exs = _doctest.DocTestParser().get_examples(doc)
        except ValueError:
            continue
        for ex in exs:
            try:
                t = _ast.parse(ex.source)
            except SyntaxError:
                continue
            if len(t.body) == 1 and isinstance(t.body[0], _ast.Assign) and len(t.body[0].targets) == 1 and isinstance(t.body[0].targets[0], _ast.Name):
                out.setdefault(t.body[0].targets[0].id, ex.source)
    return out
def _free(sources, globs):
    # The names loaded before any of sources stores them that globs lacks,
    # and the names used as an object (NAME.attr).
    stored, free, objects = set(), [], set()
    for src in sources:
        try:
            t = _ast.parse(src)
        except SyntaxError:
            continue
        loads = []
        for n in _ast.walk(t):
            if isinstance(n, _ast.Name):
                if isinstance(n.ctx, _ast.Store):
                    stored.add(n.id)
                else:
                    loads.append(n.id)
            elif isinstance(n, _ast.Attribute) and isinstance(n.value, _ast.Name):
                objects.add(n.value.id)
        for name in loads:
            if name not in stored and name not in globs and not hasattr(_builtins, name) and name not in free:
                free.append(name)
    return free, objects
def _setup(test, write):
    assigns = _assignments()
    free, objects = _free([ex.source for ex in test.examples], test.globs)
    done = []
    def bind(name, depth):
        if name in test.globs or depth > 3:
            return
        src = assigns.get(name)
        if src is not None:
            for dep in _free([src], test.globs)[0]:
                if dep != name:
                    bind(dep, depth + 1)
            try:
                exec(compile(src, "<setup>", "exec"), test.globs)
                done.append(src.strip())
            except _Timeout:
                raise
            except BaseException as e:
                done.append(src.strip() + "  # failed: " + type(e).__name__)
        elif name in objects and isinstance(test.globs.get(_CLASS), type):
            try:
                test.globs[name] = test.globs[_CLASS]()
                done.append(name + " = " + _CLASS + "()")
            except _Timeout:
                raise
            except BaseException as e:
                done.append(name + " = " + _CLASS + "()  # failed: " + type(e).__name__)
    for name in free:
        bind(name, 0)
    if done:
        write("setup, from the class's docstrings:\n" + "".join("    " + l + "\n" for l in done))
`

// ExamplesProgram returns the sandbox program that runs method m's
// examples on impls' assembly of c.
func (r *Runner) ExamplesProgram(c *Class, m *Method, impls []Impl) sandbox.Program {
	code := programCode(c, impls)
	mk := mark(code + m.Examples)
	test := fmt.Sprintf(exampleHarness, mk, base64.StdEncoding.EncodeToString([]byte(m.Examples)), r.cfg.TestCPUSeconds,
		base64.StdEncoding.EncodeToString([]byte(c.Skeleton)), c.Name, strings.Count(code, "\n")+1, c.Name+"."+m.Name)
	return sandbox.Program{TaskID: c.ID + "/" + m.Name, Code: code, Test: test}
}

// RunExamples runs the `>>>` examples of method m's docstring with doctest
// on the class assembled from impls. Failures, crashes and timeouts are a
// failed result; the error is non-nil only when the sandbox could not run
// the program at all.
func (r *Runner) RunExamples(ctx context.Context, c *Class, m *Method, impls []Impl) (ExampleResult, error) {
	p := r.ExamplesProgram(c, m, impls)
	res, err := r.run(ctx, p)
	if err != nil {
		return ExampleResult{}, fmt.Errorf("classeval %s.%s examples: %w", c.ID, m.Name, err)
	}
	out := ExampleResult{DurationS: r.tim.examples(c.ID, m.Name)}
	switch res.Stop {
	case sandbox.StopTimeout:
		out.DurationS = r.cfg.WallTimeout.Seconds()
	case sandbox.StopCPU:
		out.DurationS = r.cfg.ProgramCPU.Seconds()
	}
	mk := mark(p.Code + m.Examples)
	for _, l := range strings.Split(res.Stdout, "\n") {
		payload, ok := strings.CutPrefix(l, mk)
		if !ok {
			continue
		}
		var er struct {
			Attempted, Failed int
			Kinds             struct {
				Mismatch     int `json:"mismatch"`
				Cosmetic     int `json:"cosmetic"`
				CodeError    int `json:"code_error"`
				ExampleError int `json:"example_error"`
			}
			Report  string
			Timeout bool
		}
		if json.Unmarshal([]byte(payload), &er) == nil {
			out.Attempted, out.Failed, out.Report = er.Attempted, er.Failed, sanitize(er.Report)
			out.Mismatches, out.Cosmetic, out.CodeErrors, out.ExampleErrors = er.Kinds.Mismatch, er.Kinds.Cosmetic, er.Kinds.CodeError, er.Kinds.ExampleError
			out.Pass = er.Failed == 0
			out.Timeout = er.Timeout
			if er.Timeout {
				out.DurationS += r.cfg.TestCPUSeconds
			}
			return out, nil
		}
	}
	out.Failed = max(1, m.ExampleCount)
	out.Report = sanitize("the program failed: " + programEnd(res))
	return out, nil
}

// CheckCanonical runs c's suite on its canonical implementation and
// returns nil when every TestCase passes, else an error saying which
// failed and why (a missing library, NLTK data, a date-dependent test…).
func (r *Runner) CheckCanonical(ctx context.Context, c *Class) error {
	res, err := r.RunTests(ctx, c, c.CanonicalImpls())
	if err != nil {
		return err
	}
	if res.ClassPass {
		return nil
	}
	var bad []string
	for _, cr := range res.Cases {
		if !cr.Pass {
			bad = append(bad, cr.Name+" ("+cr.Detail+")")
		}
	}
	return fmt.Errorf("canonical solution fails %s", strings.Join(bad, "; "))
}
