package llm

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/troupe-dev/troupe/core"
)

// Sample is one LLM completion scored by a GRPO group, for training the
// LLM itself outside troupe (TRL, verl).
type Sample struct {
	// GroupID identifies the GRPO group: the completions sampled for the
	// same task instance (seed) whose rewards were compared.
	GroupID string
	// Prompt is the request's messages (the agent's own context).
	Prompt []core.Message
	// Completion is the text the LLM wrote.
	Completion string
	// Reward is the joint reward of the rollout the completion belongs to;
	// Advantage is its group-relative advantage.
	Reward, Advantage float64
	// Agent and Decision say who wrote the completion and why.
	Agent    int
	Decision string
	// Env names the task (written as data_source); Seed and Step locate the
	// completion in its episode.
	Env  string
	Seed uint64
	Step int
}

type trlMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type trlExtra struct {
	GroupID   string  `json:"group_id"`
	Agent     int     `json:"agent"`
	Decision  string  `json:"decision"`
	Seed      uint64  `json:"seed"`
	Step      int     `json:"step"`
	Reward    float64 `json:"reward"`
	Advantage float64 `json:"advantage"`
}

type trlRow struct {
	Prompt     []trlMessage `json:"prompt"`
	Completion []trlMessage `json:"completion"`
	Reward     float64      `json:"reward"`
	Advantage  float64      `json:"advantage"`
	GroupID    string       `json:"group_id"`
	Agent      int          `json:"agent"`
	Decision   string       `json:"decision"`
	DataSource string       `json:"data_source"`
	ExtraInfo  trlExtra     `json:"extra_info"`
}

// WriteTRL writes samples as JSON Lines, one object per sample, in TRL's
// conversational prompt-completion layout (see the package documentation
// for the fields). It checks every sample first and writes nothing if one
// is invalid (empty prompt, a role other than system/user/assistant, a
// non-finite reward or advantage), naming the sample's index.
func WriteTRL(w io.Writer, samples []Sample) error {
	rows := make([]trlRow, len(samples))
	for i, s := range samples {
		if len(s.Prompt) == 0 {
			return fmt.Errorf("trl: sample %d (group %q, agent %d): empty prompt", i, s.GroupID, s.Agent)
		}
		if bad(s.Reward) || bad(s.Advantage) {
			return fmt.Errorf("trl: sample %d (group %q, agent %d): reward %v / advantage %v not finite", i, s.GroupID, s.Agent, s.Reward, s.Advantage)
		}
		prompt := make([]trlMessage, len(s.Prompt))
		for j, m := range s.Prompt {
			switch m.Role {
			case "system", "user", "assistant":
			default:
				return fmt.Errorf("trl: sample %d message %d: role %q, want system, user or assistant", i, j, m.Role)
			}
			prompt[j] = trlMessage{Role: m.Role, Content: m.Content}
		}
		rows[i] = trlRow{
			Prompt:     prompt,
			Completion: []trlMessage{{Role: "assistant", Content: s.Completion}},
			Reward:     s.Reward,
			Advantage:  s.Advantage,
			GroupID:    s.GroupID,
			Agent:      s.Agent,
			Decision:   s.Decision,
			DataSource: s.Env,
			ExtraInfo: trlExtra{GroupID: s.GroupID, Agent: s.Agent, Decision: s.Decision,
				Seed: s.Seed, Step: s.Step, Reward: s.Reward, Advantage: s.Advantage},
		}
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range rows {
		if err := enc.Encode(&rows[i]); err != nil {
			return fmt.Errorf("trl: sample %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("trl: %w", err)
	}
	return nil
}

func bad(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
