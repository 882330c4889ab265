package coding

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/codetokens"
	"github.com/troupe-dev/troupe/internal/sandbox"
)

// taskInfo is what the env derives once per process from a task: its
// validated examples and harness, its hidden test program tail, the sim's
// mutant pool and the reference token counts.
type taskInfo struct {
	task     *Task
	examples []example
	visible  string // harness of the examples the canonical solution passes
	hidden   string // the task's test and the call of check
	mutants  []mutant
	// canonicalText is what the sim answers for a correct implementation.
	canonicalText       string
	refPromptTokens     int
	refCompletionTokens int
}

type taskKey struct {
	dataset [32]byte
	taskID  string
	pool    int
	sandbox *sandbox.Sandbox
}

var tasks = struct {
	sync.Mutex
	m map[taskKey]*taskEntry
}{m: map[taskKey]*taskEntry{}}

type taskEntry struct {
	once sync.Once
	info *taskInfo
	err  error
}

// prepareTask returns the task's derived data, computing it once per
// process: the examples are run against the canonical solution in the
// sandbox and only those it passes are kept.
func prepareTask(sb *sandbox.Sandbox, ds *Dataset, t *Task, pool int) (*taskInfo, error) {
	k := taskKey{ds.digest, t.TaskID, pool, sb}
	tasks.Lock()
	ent, ok := tasks.m[k]
	if !ok {
		ent = &taskEntry{}
		tasks.m[k] = ent
	}
	tasks.Unlock()
	ent.once.Do(func() { ent.info, ent.err = computeTask(sb, t, pool) })
	return ent.info, ent.err
}

func computeTask(sb *sandbox.Sandbox, t *Task, pool int) (*taskInfo, error) {
	info := &taskInfo{
		task:    t,
		hidden:  t.Test + "\n\ncheck(" + t.EntryPoint + ")\nprint(" + strconv.Quote(hiddenDone) + ")\n",
		mutants: mutantPool(mutate(t.CanonicalSolution), pool),
	}
	all := extractExamples(t.Prompt, t.EntryPoint)
	if len(all) > 0 {
		r, err := sb.Run(context.Background(), sandbox.Program{TaskID: t.TaskID, Code: t.Prompt + t.CanonicalSolution, Test: harness(all, true)})
		if err != nil {
			return nil, fmt.Errorf("task %s: checking its examples: %w", t.TaskID, err)
		}
		ok := passedExamples(r.Stdout)
		for n, ex := range all {
			if ok[n+1] {
				info.examples = append(info.examples, ex)
			}
		}
	}
	info.visible = harness(info.examples, false)
	info.canonicalText = fence(t.CanonicalSolution)
	info.refPromptTokens = requestTokens(implementRequest(t))
	info.refCompletionTokens = codetokens.Count(info.canonicalText)
	return info, nil
}

// fence wraps code in a python Markdown block, as an LLM answers.
func fence(code string) string { return "```python\n" + code + "```" }

var sandboxes = struct {
	sync.Mutex
	m map[string]*sandbox.Sandbox
}{m: map[string]*sandbox.Sandbox{}}

// sharedSandbox returns the process's sandbox for an interpreter, timeout
// and [env.sandbox] settings, so that every env instance (one per rollout
// worker) shares one result cache and one parallelism bound.
func sharedSandbox(interpreter string, timeoutS float64, sbc core.Sandbox) (*sandbox.Sandbox, error) {
	key := fmt.Sprintf("%s|%g|%s|%q", interpreter, timeoutS, sbc.Isolation, sbc.ReadOnlyDirs)
	sandboxes.Lock()
	defer sandboxes.Unlock()
	if sb, ok := sandboxes.m[key]; ok {
		return sb, nil
	}
	d := time.Duration(timeoutS * float64(time.Second))
	sb, err := sandbox.New(sandbox.Config{Interpreter: []string{interpreter, "-I"}, WallTimeout: d, CPUTime: d,
		Isolation: sandbox.IsolationMode(sbc.Isolation), ReadOnlyPaths: sbc.ReadOnlyDirs})
	if err != nil {
		return nil, err
	}
	sandboxes.m[key] = sb
	return sb, nil
}

// sandboxStats returns the counters of every sandbox the package's envs
// use, summed: how many programs ran and how often the cache answered.
func sandboxStats() sandbox.Stats {
	sandboxes.Lock()
	defer sandboxes.Unlock()
	var s sandbox.Stats
	for _, sb := range sandboxes.m {
		t := sb.Stats()
		s.Runs += t.Runs
		s.Hits += t.Hits
		s.Misses += t.Misses
		s.Shared += t.Shared
		s.Evictions += t.Evictions
		s.Entries += t.Entries
		s.Bytes += t.Bytes
		s.RunWall += t.RunWall
	}
	return s
}
