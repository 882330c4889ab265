// Package cluster plays a training iteration's episodes (and an
// evaluation's) on rollout workers on other machines, through NATS
// JetStream:
//
//   - the trainer ([Client], a trainer.Sampler and a rollout.Player) puts
//     the resolved
//     configuration and each iteration's policy weights in an object store
//     under their sha256, publishes one message per episode on a
//     work-queue stream (run id, iteration, batch, index, task seed,
//     rollout seed, forced prefix of a branch, policy and configuration
//     hashes: the seeds come from the job, never from the worker), and
//     collects the results from a key-value bucket;
//   - workers ([Worker], `troupe worker`) pull jobs with explicit acks,
//     fetch (and cache) what a job names by hash, play the episode, write
//     the result under the job's key (run.iteration.batch.index) and ack.
//     A long episode reports progress (InProgress) so it is not
//     redelivered while alive. The delivery settings ([Config], the
//     [cluster] table) come with each job, and so does the trainer's
//     trace context (W3C traceparent in the message headers).
//
// Delivery is at least once, the effect exactly once: a result is written
// with a create-if-absent, so a job delivered twice (a worker killed
// after writing and before acking, a late ack) counts once; the trainer
// reads only the keys of its own run, iteration and batch, so a result of
// another run or an older iteration is never read. A job that fails on
// every delivery fails its episode after [Config].MaxDeliver tries, as a
// local failure does (the worker writes the failure on the last delivery;
// the trainer writes it when the server gives up on a job whose worker
// died each time). An episode the LLM rate-limited (status 429) is not a
// failed delivery: the worker hands the job back (publishes it again and
// acks), pauses, and fails the episode only after
// [Config].MaxRateLimited hand-backs.
//
// Results are the ones the in-process pool gives: the same seeds, the
// same policy bits (safetensors round trip), the same episode code; the
// trainer orders them by job. So a distributed run writes the same
// metrics.jsonl (timing aside) and policy.safetensors as a local one.
package cluster
