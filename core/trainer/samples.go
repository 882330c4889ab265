package trainer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/troupe-dev/troupe/core/llm"
	"github.com/troupe-dev/troupe/core/rollout"
)

// LLMSamplesFile is the run-directory file that keeps every real LLM call
// of training with its GRPO group, joint reward and advantage; `troupe
// export` turns it into TRL / verl training data.
const LLMSamplesFile = "llm_samples.jsonl"

// SampleRecord is one line of LLMSamplesFile.
type SampleRecord struct {
	Iteration int        `json:"iteration"`
	Sample    llm.Sample `json:"sample"`
}

// appendLLMSamples records the iteration's real (non-sim) LLM calls.
func (t *Trainer) appendLLMSamples(out string, iteration int, results []rollout.EpisodeResult) error {
	var buf bytes.Buffer
	G := t.cfg.GroupSize
	for k, r := range results {
		if r.Failed || len(r.LLMCalls) == 0 {
			continue
		}
		for _, c := range r.LLMCalls {
			line, err := json.Marshal(SampleRecord{Iteration: iteration, Sample: llm.Sample{
				GroupID: fmt.Sprintf("it%d-task%d", iteration, k/G), Prompt: c.Prompt, Completion: c.Completion,
				Reward: r.Reward, Advantage: r.Advantages[c.Agent], Agent: c.Agent, Decision: c.Decision,
				Env: r.Episode.Env, Seed: r.Episode.Seed, Step: c.Step,
			}})
			if err != nil {
				return err
			}
			buf.Write(line)
			buf.WriteByte('\n')
		}
	}
	if buf.Len() == 0 {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(out, LLMSamplesFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadLLMSamples reads a run directory's recorded LLM samples. Records of
// iterations after upTo (those of an interrupted iteration) are skipped
// when upTo > 0. A line that does not parse is an error naming it.
func ReadLLMSamples(dir string, upTo int) ([]llm.Sample, error) {
	path := filepath.Join(dir, LLMSamplesFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []llm.Sample
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var rec SampleRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if upTo > 0 && rec.Iteration > upTo {
			continue
		}
		out = append(out, rec.Sample)
	}
	return out, sc.Err()
}
