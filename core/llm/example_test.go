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
func ExampleNew() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"## Summary\nA short RFC."}}],`+
			`"usage":{"prompt_tokens":21,"completion_tokens":6,"total_tokens":27}}`)
	}))
	defer srv.Close()

	cfg := llm.DefaultConfig()
	cfg.Backend = llm.BackendOpenAI
	cfg.BaseURL = srv.URL + "/v1"
	cfg.Model = "qwen2.5-7b-instruct"
	cfg.APIKeyEnv = "EXAMPLE_API_KEY" // unset: local servers need no key
	cfg.MaxConcurrency = 32
	cfg.RequestsPerMinute = 600
	cfg.Timeout = 30 * time.Second
	backend, err := llm.New(cfg)
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
	// Output:
	// ## Summary
	// A short RFC.
	// openai: 21 prompt + 6 completion tokens
}

// Record an endpoint's completions once, then replay them offline: with
// no server and no API key.
func ExampleNew_replay() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"## Summary"}}],`+
			`"usage":{"prompt_tokens":21,"completion_tokens":3,"total_tokens":24}}`)
	}))
	dir, _ := os.MkdirTemp("", "recordings")
	defer os.RemoveAll(dir)

	cfg := llm.DefaultConfig()
	cfg.Backend, cfg.BaseURL, cfg.APIKeyEnv = llm.BackendOpenAI, srv.URL+"/v1", "EXAMPLE_API_KEY"
	cfg.Cache, cfg.CacheMode = dir, llm.CacheRecord
	rec, _ := llm.New(cfg)
	req := core.ChatRequest{Messages: []core.Message{{Role: "user", Content: "Write."}}, Decision: "draft_section", Seed: 1}
	live, _ := rec.Chat(context.Background(), req)
	rec.Close()
	srv.Close()

	cfg.CacheMode = llm.CacheReplay
	replay, _ := llm.New(cfg)
	defer replay.Close()
	again, _ := replay.Chat(context.Background(), req)
	fmt.Println(again.Usage.Backend, again.Text == live.Text, again.Usage.Latency == live.Usage.Latency)
	// Output:
	// replay:openai true true
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
	sim, err := llm.NewSim(sectionSim{}, spec, llm.DefaultConfig().Sim, nil) // 0.8 s + p/2000 + c/40
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
