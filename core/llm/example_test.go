package llm_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/llm"
)

// An OpenAI-compatible server stands in for vLLM, Ollama or api.openai.com.
func ExampleNewOpenAI() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"## Summary\nA short RFC."}}],`+
			`"usage":{"prompt_tokens":21,"completion_tokens":6,"total_tokens":27}}`)
	}))
	defer srv.Close()

	backend, err := llm.NewOpenAI(llm.OpenAIConfig{
		BaseURL:           srv.URL + "/v1",
		Model:             "qwen2.5-7b-instruct",
		APIKeyEnv:         "EXAMPLE_API_KEY", // unset: local servers need no key
		MaxConcurrency:    32,
		RequestsPerMinute: 600,
		Timeout:           30 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer backend.Close()

	resp, err := backend.Chat(context.Background(), core.ChatRequest{
		Messages:  []core.Message{{Role: "user", Content: "Write the Summary section."}},
		MaxTokens: 256,
		Agent:     0,
		Decision:  "draft_section",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s\n%s: %d prompt + %d completion tokens\n", resp.Text, resp.Usage.Backend, resp.Usage.PromptTokens, resp.Usage.CompletionTokens)
	fmt.Printf("agent 0 made %d call(s)\n", backend.Accounting().Agent(0).Calls)
	// Output:
	// ## Summary
	// A short RFC.
	// openai: 21 prompt + 6 completion tokens
	// agent 0 made 1 call(s)
}

// sectionSim is an env's surrogate of what an LLM would write.
type sectionSim struct{}

func (sectionSim) Simulate(agent, decision int, req core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	styles := []string{"## Summary", "Summary\n======="}
	return core.SimCompletion{
		Text:             styles[rng.IntN(len(styles))] + "\nOne paragraph.",
		PromptTokens:     400,
		CompletionTokens: 120,
	}, nil
}

// The simulated LLM: text from the env's surrogate, virtual latency.
func ExampleNewSim() {
	spec := core.EnvSpec{
		Name:      "writing",
		Agents:    []string{"writer0", "writer1"},
		Decisions: []core.DecisionSpec{{Name: "wait"}, {Name: "draft_section", NeedsText: true}},
	}
	sim, err := llm.NewSim(sectionSim{}, spec, llm.SimConfig{}) // default tier: 0.8 s + p/2000 + c/40
	if err != nil {
		fmt.Println(err)
		return
	}
	req := core.ChatRequest{Messages: []core.Message{{Role: "user", Content: "Write the Summary."}},
		Agent: 1, Decision: "draft_section", Seed: 42}
	a, _ := sim.Chat(context.Background(), req)
	b, _ := sim.Chat(context.Background(), req)
	fmt.Println(a.Usage.Backend, a.Usage.Latency, a.Text == b.Text) // 0.8 s + 400/2000 s + 120/40 s
	// Output:
	// sim 4s true
}

// Record completions of a backend once, then replay them offline.
func ExampleNewRecorder() {
	dir, _ := os.MkdirTemp("", "recordings")
	defer os.RemoveAll(dir)
	spec := core.EnvSpec{Name: "writing", Agents: []string{"w"}, Decisions: []core.DecisionSpec{{Name: "draft_section", NeedsText: true}}}
	sim, _ := llm.NewSim(sectionSim{}, spec, llm.SimConfig{})

	rec, _ := llm.NewRecorder(sim, dir, llm.ModeRecord)
	req := core.ChatRequest{Model: "m", Messages: []core.Message{{Role: "user", Content: "Write."}}, Decision: "draft_section", Seed: 1}
	live, _ := rec.Chat(context.Background(), req)

	replay, _ := llm.NewRecorder(nil, dir, llm.ModeReplay)
	again, _ := replay.Chat(context.Background(), req)
	fmt.Println(again.Usage.Backend, again.Text == live.Text, again.Usage.Latency == live.Usage.Latency)
	// Output:
	// replay:sim true true
}

func ExampleWriteTRL() {
	samples := []llm.Sample{{
		GroupID:    "it7-seed3",
		Prompt:     []core.Message{{Role: "user", Content: "Write the Summary."}},
		Completion: "## Summary",
		Reward:     0.9, Advantage: 0.25,
		Agent: 1, Decision: "draft_section", Env: "writing", Seed: 3, Step: 2,
	}}
	if err := llm.WriteTRL(os.Stdout, samples); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"prompt":[{"role":"user","content":"Write the Summary."}],"completion":[{"role":"assistant","content":"## Summary"}],"reward":0.9,"advantage":0.25,"group_id":"it7-seed3","agent":1,"decision":"draft_section","data_source":"writing","extra_info":{"group_id":"it7-seed3","agent":1,"decision":"draft_section","seed":3,"step":2,"reward":0.9,"advantage":0.25}}
}
