package classeval

import (
	"fmt"
	"strings"

	"github.com/troupe-dev/troupe/envs/classeval/internal/suite"
)

// fakeBackend is a small in-memory backend for tests of the env's logic:
// code containing "good" passes its examples and its TestCase, code
// containing "flaky" passes its examples but not its TestCase, anything
// else fails both.
type fakeBackend struct {
	tasks []classTask
	// recs[model] lists, per method, the sources and codes.
	recs  map[string][]recording
	modes map[string][]string
	// canonicalFails[t] is CanonicalFailure's answer for task t.
	canonicalFails map[int]string
}

func newFake() *fakeBackend {
	f := &fakeBackend{recs: map[string][]recording{}, modes: map[string][]string{}}
	for k := range 8 {
		f.tasks = append(f.tasks, classTask{
			ID: fmt.Sprintf("ClassEval_%d", k), Name: fmt.Sprintf("C%d", k), Skeleton: "class C:\n    def a(self): pass\n    def b(self): pass\n    def c(self): pass\n",
			Methods: []classMethod{{Name: "a", Deps: []int{1, 2}, Examples: 2}, {Name: "b", Examples: 1}, {Name: "c", Deps: []int{1}, Examples: 0}},
		})
	}
	// GPT-4 is right from the skeleton, ChatGPT only in context or on a
	// second try; Vicuna is always wrong, CodeGeeX is flaky.
	f.recs["GPT-4"] = []recording{{Source: "m_dire", Code: "good", OK: true, CompletionTokens: 100}, {Source: "m_iter", Code: "good", OK: true, CompletionTokens: 90}, {Source: "c_t0", Code: "good", OK: true, CompletionTokens: 400}}
	f.recs["ChatGPT"] = []recording{{Source: "m_dire", Code: "bad", OK: true, CompletionTokens: 80}, {Source: "m_iter", Code: "good", OK: true, CompletionTokens: 85}, {Source: "c_t0", Code: "good", OK: true, CompletionTokens: 300}}
	f.recs["Vicuna"] = []recording{{Source: "m_dire", Code: "", OK: false, CompletionTokens: 50}, {Source: "c_t0", Code: "bad", OK: true, CompletionTokens: 200}}
	f.recs["CodeGeeX"] = []recording{{Source: "m_dire", Code: "flaky", OK: true, CompletionTokens: 60}, {Source: "m_iter", Code: "flaky", OK: true, CompletionTokens: 60}}
	for _, recs := range f.recs {
		for k := range recs {
			recs[k].status = suite.Extracted
			if !recs[k].OK {
				recs[k].status = suite.NotExtracted // visibly broken
			}
		}
	}
	f.modes["GPT-4"] = []string{"m_dire", "m_iter", "c_t0"}
	f.modes["ChatGPT"] = []string{"m_dire", "m_iter", "c_t0"}
	f.modes["Vicuna"] = []string{"m_dire", "c_t0"}
	f.modes["CodeGeeX"] = []string{"m_dire", "m_iter"}
	return f
}

func (f *fakeBackend) Tasks() []classTask { return f.tasks }

func (f *fakeBackend) Recordings(model string, t, m int) []recording { return f.recs[model] }

func (f *fakeBackend) ClassSamples(model string, t int) []string {
	var out []string
	for _, r := range f.recs[model] {
		if isClassSample(r.Source) {
			out = append(out, r.Source)
		}
	}
	return out
}

func (f *fakeBackend) ClassSampleTokens(model string, t int, source string) int {
	for _, r := range f.recs[model] {
		if r.Source == source {
			return r.CompletionTokens
		}
	}
	return 0
}

func (f *fakeBackend) HasMode(model, mode string) bool {
	for _, m := range f.modes[model] {
		if m == mode {
			return true
		}
	}
	return false
}

func codesOf(recs []*recording) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		if r != nil {
			out[i] = r.Code
		}
	}
	return out
}

func (f *fakeBackend) RunExamples(t, m int, recs []*recording) (exampleRun, error) {
	codes := codesOf(recs)
	pass := strings.Contains(codes[m], "good") || strings.Contains(codes[m], "flaky")
	return exampleRun{Pass: pass, Output: fmt.Sprintf("examples of method %d: pass=%v", m, pass), DurationS: 0.25}, nil
}

func (f *fakeBackend) Score(t int, recs []*recording) (classScore, error) {
	codes := codesOf(recs)
	s := classScore{ClassPass: true}
	for _, c := range codes {
		p := strings.Contains(c, "good")
		s.MethodPass = append(s.MethodPass, p)
		s.Detail = append(s.Detail, fmt.Sprint(p))
		s.ClassPass = s.ClassPass && p
	}
	return s, nil
}

func (f *fakeBackend) Tokens(text string) int { return (len(text) + 3) / 4 }

func (f *fakeBackend) CanonicalFailure(t int) (string, error) { return f.canonicalFails[t], nil }
