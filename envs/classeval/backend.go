package classeval

import "github.com/troupe-dev/troupe/envs/classeval/internal/suite"

// What the env needs of its data and of the sandbox, in its own terms. The
// adapter in suite.go binds it to package internal/suite, which loads the
// ClassEval schema and the outputs directory, extracts method code from
// the raw replies and runs code in the sandbox.

// classTask is one class as the env uses it.
type classTask struct {
	// ID is the task id ("ClassEval_0"), Name the class name.
	ID, Name string
	// Skeleton is the class skeleton the models were prompted with.
	Skeleton string
	// Methods are the methods to implement, in the dataset's order.
	Methods []classMethod
	// Missing are the modules the class imports (in its code or its
	// tests) that the sandbox's interpreter cannot find: its tests would
	// fail whatever the code, so the env refuses to play it.
	Missing []string
}

// classMethod is one method of a class.
type classMethod struct {
	Name string
	// Deps are the indexes (into classTask.Methods) of the methods it
	// calls, from methods_info[].dependencies.method_dependencies.
	Deps []int
	// Examples is the number of visible `>>>` examples in its docstring.
	Examples int
}

// recording is one real completion of one method by one model: the code of
// the method as extracted from the model's reply, and what the reply cost.
type recording struct {
	// Source names where it comes from: "m_dire", "m_iter", "c_t0",
	// "c_5#K".
	Source string
	// Code is the method's code ("" when none could be extracted; OK is
	// then false and the method stays a stub).
	Code string
	OK   bool
	// CompletionTokens counts the tokens of the whole reply the model
	// wrote (for a whole-class sample, the whole class).
	CompletionTokens int
	// impl is what the backend assembles the class from.
	impl suite.Impl
	// status is what the extraction found in the reply (whole code, cut
	// off, a restated stub, nothing): what its writer sees on reading it.
	status suite.ExtractStatus
}

// exampleRun is the outcome of running one method's visible examples.
type exampleRun struct {
	Pass bool `json:"pass"`
	// Output is what the agent reads (the doctest report).
	Output string `json:"output"`
	// DurationS is the run's deterministic duration in seconds.
	DurationS float64 `json:"duration_s"`
	// Kinds counts the failed examples by kind: a wrong output, the right
	// value printed otherwise, an exception raised in the class's code, an
	// exception raised by the example itself (see suite.ExampleResult).
	Kinds [4]int `json:"kinds"`
}

// classScore is the outcome of the hidden unittest suite of a class.
type classScore struct {
	// MethodPass holds, per method, whether its TestCase passed.
	MethodPass []bool `json:"method_pass"`
	// ClassPass reports that every TestCase of the class passed (the
	// class-level one included).
	ClassPass bool `json:"class_pass"`
	// Detail is the sandbox's account per method (for results.json).
	Detail []string `json:"detail"`
}

// backend is the data and execution layer behind the env.
type backend interface {
	// Tasks returns the classes of the dataset, in its order.
	Tasks() []classTask
	// Recordings returns model's recorded completions of method m of
	// task t, in the order m_dire, m_iter, c_t0, c_5#0..; a mode the
	// outputs directory lacks is absent.
	Recordings(model string, t, m int) []recording
	// ClassSamples returns the whole-class samples ("c_t0", "c_5#0", …)
	// model has for task t, in replay order; ClassSampleTokens counts the
	// tokens of one sample's whole reply.
	ClassSamples(model string, t int) []string
	ClassSampleTokens(model string, t int, source string) int
	// HasMode reports whether the outputs directory holds model's
	// completions in mode ("m_dire", "m_iter", "c_t0", "c_5").
	HasMode(model, mode string) bool
	// RunExamples runs the visible examples of method m of task t with
	// the class assembled from recs (one per method, nil = stub).
	RunExamples(t, m int, recs []*recording) (exampleRun, error)
	// Score runs the hidden unittest suite of task t on the class
	// assembled from recs.
	Score(t int, recs []*recording) (classScore, error)
	// Tokens counts the tokens of a text.
	Tokens(text string) int
	// CanonicalFailure says how task t's canonical solution fails the
	// class's own tests in the sandbox ("" when it passes them all, or
	// when the class was checked before it was shipped).
	CanonicalFailure(t int) (string, error)
}
