// Package suite is the data and execution layer of the ClassEval team
// coding task: it loads classes in ClassEval's schema and the completions
// real LLMs wrote for them, extracts each method's code from the raw
// replies, assembles a class from chosen per-method implementations, and
// runs a method's visible examples or the class's hidden unittest suite in
// the sandbox (internal/sandbox).
//
// # Data
//
// [LoadDataset] reads a dataset in ClassEval's schema (a JSON array of
// tasks, plain or gzip) into a [Dataset] of [Class]es; [Embedded] returns
// the shipped one (75 ClassEval classes, data/README.md). Every [Method]
// carries its signature and docstring, its visible examples (the `>>>`
// lines of its docstring, [Method.Examples]), its dependencies
// (methods_info[].dependencies, [Dependencies]) and the TestCase that
// scores it ([Method.TestCase] says how the dataset's test_class is
// checked). The canonical solution
// ([Method.Canonical]) serves only to check the harness.
//
// [LoadOutputs] reads an outputs directory in the benchmark's layout
// (MODEL_100_MODE.json or .json.gz, MODE one of m_dire, m_iter, c_t0, c_5)
// into [Outputs]; [EmbeddedOutputs] the shipped one. Loading extracts every
// method's code from the raw replies ([Extract]): for the method-level
// modes from raw_output (a reply that may hold prose, fenced blocks that
// repeat the class, an echoed prompt, or only the method's body), for the
// class-level modes from each whole-class predict. Each result is a
// [Completion] ([Outputs.Completions]): the method's source normalized to
// class-member indentation, the imports its code block declared and the
// helper methods it calls, its token counts, and an [ExtractStatus]:
// Extracted, ExtractedTruncated (cut off mid-statement: will not compile),
// ExtractedStub (the model restated the skeleton) or NotExtracted. Only
// Extracted code is worth running; the others are real outcomes of asking
// that model and are counted, per model and mode, by [Outputs.Report]
// ([ExtractionReport]).
//
// Token counts come from [Tokens], a deterministic approximation of a
// cl100k-like BPE tokenizer (the rule of envs/coding's approxTokens: 3.3
// characters per token on HumanEval, 3.9 on GPT-4's m_dire methods).
//
// # Execution
//
// A [Runner] wraps a sandbox. [Class.Assemble] builds the module text of a
// class from one [Impl] per method (the zero Impl keeps the stub: the
// method's signature with `pass`; [Completion.Impl] converts): the
// dataset's imports, the imports the implementations declared, the class
// line, its constructor (the dataset's class_constructor, i.e. __init__
// and the fields), the methods in dataset order, then the helpers the
// implementations brought. [Runner.RunTests] runs every TestCase of the
// class's unittest suite in one Python process (each test under its own
// CPU-time alarm, results streamed so a crash keeps what finished) and
// returns a [TestResult]: per TestCase and per method pass/fail (a method
// passes when its [Method.TestCase] passes; the 4 methods without one are
// scored by the class-level TestCases), and the class-level pass (every
// TestCase). [Runner.RunExamples] runs one method's docstring examples
// with doctest and returns an [ExampleResult] whose Report is what an
// agent may read. A hang, crash, timeout or syntax error is a failed
// result, never an error: the error return is only for a sandbox that
// cannot run at all.
//
// Both are deterministic: the interpreter runs with PYTHONHASHSEED=0 and
// TZ=UTC, `random` is seeded before every test, the class's code and tests
// read a clock that starts at [ClockEpoch] (the week ClassEval was
// published) and moves by a microsecond per reading and by the seconds
// slept (time.sleep does not sleep: it spends the test's budget), so that
// neither the day the suite runs nor a second boundary between two
// readings changes an outcome, results are memoized by the SHA-256
// of exactly the program run, and the reported duration
// ([TestResult.DurationS], [ExampleResult.DurationS]) is not the wall time
// of this run but a per-class figure measured once and shipped
// (data/timings.json, [Timings]), plus the per-test CPU limit for every
// TestCase or example run that hit it, or the program's wall or CPU bound
// when it hit one ([RunnerConfig]). Texts (failure details, doctest
// reports) are sanitized of object addresses and temporary paths.
//
// [Runner.CheckCanonical] assembles a class from its canonical methods and
// runs its suite; [EmbeddedExclusions] lists the shipped classes whose
// canonical solution fails on the reference machine, with the reason (4
// of 75; data/README.md): an env must leave them out. For a user's own
// dataset, call CheckCanonical per class.
//
// [Class.Modules] lists the modules a class imports, and [Runner.Probe]
// which of them the sandbox's interpreter cannot find, with a fingerprint
// of the interpreter and of those it finds (for keys of stored outcomes).
// The Python libraries the shipped classes import come from Debian
// ([DebianPackages]):
// python3-numpy python3-docx python3-nltk python3-gensim python3-pandas
// python3-openpyxl python3-bs4 python3-pil python3-pypdf2
// python3-reportlab. Tests that need Python skip without it unless
// TROUPE_TEST_REQUIRE_TOOLS is set; the check of every class runs with
// TROUPE_CLASSEVAL_FULL=1.
package suite
