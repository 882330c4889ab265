package trainer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/troupe-dev/troupe/internal/atomicfile"
)

// checkpointState is checkpoint/state.json. It is written last, atomically,
// and names the optimizer file it belongs to, so a crash at any moment
// leaves either the old or the new checkpoint, never a mix.
type checkpointState struct {
	Iteration int    `json:"iteration"`
	EnvSteps  int64  `json:"env_steps"`
	Optimizer string `json:"optimizer"`
	// Critic names the critic's file (credit = "value" only).
	Critic string `json:"critic,omitempty"`
	Env    string `json:"env"`
}

func (t *Trainer) saveCheckpoint(out string) error {
	dir := filepath.Join(out, "checkpoint")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := fmt.Sprintf("optimizer-%06d.safetensors", t.iter)
	if err := t.opt.Save(filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	cs := checkpointState{Iteration: t.iter, EnvSteps: t.envSteps, Optimizer: name, Env: t.spec.Name}
	if t.critic != nil {
		cs.Critic = fmt.Sprintf("critic-%06d.safetensors", t.iter)
		if err := t.critic.save(filepath.Join(dir, cs.Critic)); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	st, _ := json.MarshalIndent(cs, "", "  ")
	if err := atomicfile.WriteFile(filepath.Join(dir, "state.json"), append(st, '\n'), 0o644); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	// Older optimizer and critic files are no longer referenced.
	for _, pattern := range []string{"optimizer-*.safetensors", "critic-*.safetensors"} {
		old, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, f := range old {
			if b := filepath.Base(f); b != name && b != cs.Critic {
				_ = os.Remove(f)
			}
		}
	}
	return nil
}

func (t *Trainer) loadCheckpoint(out string) error {
	dir := filepath.Join(out, "checkpoint")
	raw, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		return fmt.Errorf("resume: %w (is %s a run directory with a checkpoint?)", err, out)
	}
	var st checkpointState
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("resume: %s: %w", filepath.Join(dir, "state.json"), err)
	}
	if st.Env != t.spec.Name {
		return fmt.Errorf("resume: the checkpoint is of env %q, the configuration loads %q", st.Env, t.spec.Name)
	}
	if err := t.opt.Load(filepath.Join(dir, st.Optimizer)); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if t.critic != nil {
		if st.Critic == "" {
			// Written with another credit: the critic starts fresh here.
			t.logger().Warn("resume: the checkpoint has no critic (written with another credit); credit = \"value\" starts a fresh one", "iteration", st.Iteration)
		} else if err := t.critic.load(filepath.Join(dir, st.Critic)); err != nil {
			return fmt.Errorf("resume: %w", err)
		}
	}
	t.iter, t.envSteps = st.Iteration, st.EnvSteps
	if err := truncateLines(filepath.Join(out, "metrics.jsonl"), st.Iteration); err != nil {
		return err
	}
	return truncateSamples(filepath.Join(out, LLMSamplesFile), st.Iteration)
}

// truncateSamples keeps the LLM samples of the checkpointed iterations,
// atomically: the iterations after the checkpoint run again and record
// their samples anew.
func truncateSamples(path string, upTo int) error {
	return filterLines(path, true, func(n int, line []byte) (bool, error) {
		var rec struct {
			Iteration int `json:"iteration"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			return false, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		return rec.Iteration <= upTo, nil
	})
}

// truncateLines keeps the first n lines of a file (the metrics of the
// checkpointed iterations), atomically.
func truncateLines(path string, n int) error {
	kept := 0
	return filterLines(path, n == 0, func(int, []byte) (bool, error) {
		kept++
		return kept <= n, nil
	})
}

// filterLines rewrites path, atomically, with the non-blank lines keep
// accepts (it sees each with its 1-based line number); a missing file is
// fine if missingOK. Errors are prefixed "resume:".
func filterLines(path string, missingOK bool, keep func(n int, line []byte) (bool, error)) error {
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) && missingOK {
		return nil
	}
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		ok, err := keep(n, sc.Bytes())
		if err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		if ok {
			out.Write(sc.Bytes())
			out.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("resume: %s: %w", path, err)
	}
	if out.Len() == len(raw) {
		return nil
	}
	return atomicfile.WriteFile(path, out.Bytes(), 0o644)
}
