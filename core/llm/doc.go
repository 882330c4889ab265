// Package llm provides troupe's LLM backends (implementations of core.LLM),
// their settings, a record/replay cache, and an export of scored
// completions for training the LLM itself.
//
// # Settings
//
// A [Config] is one backend's settings, a table llm.NAME of the agentfile:
// [DefaultConfig] gives the defaults and [Config.Validate] the rules,
// reporting a *core.SettingError that names the key. [New] builds the
// backend a Config describes; [NewSim] builds the simulated LLM for an env.
//
// # Backends
//
// The openai backend ([BackendOpenAI]) talks to any OpenAI-compatible
// chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp) through
// github.com/sashabaranov/go-openai. [New] builds it; the API key is read
// once from the environment variable Config.APIKeyEnv names and never
// appears in errors, logs or String output.
//
//   - Concurrency: at most MaxConcurrency HTTP requests in flight
//     (default 16); the HTTP transport keeps as many idle keep-alive
//     connections, so in-flight requests reuse connections.
//   - Rate limits: RequestsPerMinute spaces request starts evenly (no
//     burst); TokensPerMinute paces tokens with a one-second bucket, each
//     attempt charged its estimate (prompt characters ÷ 4 + max_tokens)
//     before it is sent and corrected to the reported usage after.
//     Retries count against both limits.
//   - Retries: on 408, 409, 429 and 5xx statuses, per-attempt timeouts and
//     dropped connections (reset, EOF), up to MaxRetries (default 5; 0
//     means none) with jittered exponential backoff (500ms·2^k capped at
//     30s, uniform in [d/2, d]); a Retry-After header (seconds or HTTP
//     date) or retry-after-ms replaces the delay, honoured up to 60s.
//     Other 4xx statuses, malformed JSON and a response without choices
//     fail at once. A failed call returns a [*CallError] naming the
//     endpoint, the status and the attempts.
//   - Timeouts and cancellation: each attempt is bounded by Timeout
//     (default 60s); cancelling the caller's context ends the call at
//     once, whether it is in flight, queued or backing off; Close ends
//     all calls (they fail with [ErrClosed]) and waits for them.
//   - Usage: prompt and completion tokens from the response's usage
//     fields (estimated at 4 characters a token when the server sends
//     none), Latency = wall time of the whole call, Backend "openai".
//   - Temperature 0 is sent as the smallest positive float32, since
//     go-openai omits a zero temperature and servers would use 1.0; the
//     seed is sent modulo 2^31 (llama.cpp keeps 32 bits). For reasoning
//     models (o1, o3, o4, gpt-5…) max_tokens is sent as
//     max_completion_tokens and the temperature is left to the server.
//
// [Sim] ([BackendSim]) is the offline simulated LLM: the text is the env's
// own surrogate (core.Simulator), drawn with rand.NewPCG(req.Seed,
// constant) so the same request gives the same text, and the latency is
// virtual, from a [LatencyModel] (Base + prompt tokens ÷ PrefillTPS +
// completion tokens ÷ DecodeTPS; default 0.8 s, 2000, 40). [NewSim] can
// give a decision's core.DecisionSpec.Tier its own model; the runtime
// gives every tier the agent's [llm.NAME.sim] model.
// Chat never sleeps. Every completion is labelled Backend "sim".
//
// Token budgets are not a backend's business: the runtime sums each
// call's Usage per episode and stops an episode at its budget
// (rollout.Budget).
//
// # Record and replay
//
// With Config.Cache set, [New] wraps the openai backend in an on-disk
// cache so that an evaluation against a real endpoint can be rerun offline
// with identical results. The key is the sha256 of the canonical JSON of
// the request's model (the configured one when the request names none),
// messages, max_tokens, temperature, stop and seed — what the endpoint
// sees; agent, decision and tier are not part of it. Each key is one file,
// <dir>/<key>.json, written atomically. Modes ([CacheMode]): "record"
// (always call, write), "replay" (never call, no client and no API key; a
// miss fails with an error wrapping [ErrNotRecorded] that names the key)
// and "auto" (replay hits, record misses). Replayed completions return the
// recorded text and Usage (tokens and latency) unchanged except Backend,
// which becomes "replay:<original>", e.g. "replay:openai".
//
// # Training data for the LLM (TRL, verl)
//
// [WriteTRL] writes [Sample]s as JSON Lines in TRL's conversational
// prompt-completion layout, one object per completion:
//
//	{"prompt": [{"role": "system", "content": "..."}, {"role": "user", "content": "..."}],
//	 "completion": [{"role": "assistant", "content": "..."}],
//	 "reward": 0.82, "advantage": 0.41, "group_id": "it3-seed17",
//	 "agent": 2, "decision": "draft_section", "data_source": "writing",
//	 "extra_info": {"group_id": "it3-seed17", "agent": 2, "decision": "draft_section",
//	                "seed": 17, "step": 4, "reward": 0.82, "advantage": 0.41}}
//
// Fields: prompt — the agent's messages (TRL conversational format, the
// column GRPOTrainer reads); completion — the LLM's answer as one assistant
// message; reward — the joint reward of the rollout; advantage — its GRPO
// advantage within the group; group_id — the group (task instance) whose
// completions were compared; agent, decision — who wrote it and why;
// data_source — the env name (verl's column name); extra_info — the same
// identifiers plus seed and step (verl hands extra_info to its reward
// function). Load it with datasets.load_dataset("json", data_files=...).
// TRL's GRPOTrainer generates its own completions from "prompt" and passes
// the other columns to reward functions as keyword arguments; the
// prompt/completion pair also suits SFTTrainer (e.g. rows with advantage >
// 0). verl reads parquet: convert with pandas (pd.read_json(path,
// lines=True).to_parquet(...)).
package llm
