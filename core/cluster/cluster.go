package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-dev/troupe/core/rollout"
)

// The environment variables [Connect] reads credentials and TLS files
// from. Credentials never come from the agentfile or the run directory.
const (
	// EnvCreds names a NATS credentials file (JWT and NKey seed).
	EnvCreds = "TROUPE_NATS_CREDS"
	// EnvUser and EnvPassword give a user and password.
	EnvUser     = "TROUPE_NATS_USER"
	EnvPassword = "TROUPE_NATS_PASSWORD"
	// EnvCA names a PEM file of the CA that signed the server's
	// certificate (else the system roots verify it).
	EnvCA = "TROUPE_NATS_CA"
	// EnvCert and EnvKey name the client certificate and key for servers
	// that verify clients (mutual TLS).
	EnvCert = "TROUPE_NATS_CERT"
	EnvKey  = "TROUPE_NATS_KEY"
)

// Names of the JetStream resources a cluster uses.
const (
	// JobStream is the work-queue stream of episode jobs.
	JobStream = "TROUPE_JOBS"
	// JobSubject is the subject jobs are published on.
	JobSubject = "troupe.jobs"
	// WorkerConsumer is the durable pull consumer every worker shares.
	WorkerConsumer = "troupe-workers"
	// ResultBucket is the key-value bucket of results, keyed
	// run.iteration.batch.index.
	ResultBucket = "troupe-results"
	// ArtifactBucket is the object store of content-addressed artifacts
	// (resolved configurations, policy weights), named by sha256.
	ArtifactBucket = "troupe-artifacts"
)

// Connect connects to the NATS server at url with the credentials and TLS
// files named by the environment (EnvCreds, EnvUser/EnvPassword, EnvCA,
// EnvCert/EnvKey). A tls:// URL requires TLS.
func Connect(url, name string) (*nats.Conn, error) {
	if err := CheckURL(url); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1)}
	if f := os.Getenv(EnvCreds); f != "" {
		opts = append(opts, nats.UserCredentials(f))
	}
	if u := os.Getenv(EnvUser); u != "" {
		opts = append(opts, nats.UserInfo(u, os.Getenv(EnvPassword)))
	}
	if f := os.Getenv(EnvCA); f != "" {
		opts = append(opts, nats.RootCAs(f))
	}
	if c, k := os.Getenv(EnvCert), os.Getenv(EnvKey); c != "" || k != "" {
		if c == "" || k == "" {
			return nil, fmt.Errorf("cluster: $%s and $%s go together (have only one)", EnvCert, EnvKey)
		}
		opts = append(opts, nats.ClientCert(c, k))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster: connecting to %s: %w", url, err)
	}
	return nc, nil
}

// resources are a cluster's JetStream resources.
type resources struct {
	js        jetstream.JetStream
	stream    jetstream.Stream
	consumer  jetstream.Consumer
	results   jetstream.KeyValue
	artifacts jetstream.ObjectStore
}

// open creates (or finds) the stream, consumer, bucket and object store.
// A trainer (update) sets the consumer's delivery settings (ack_wait,
// max_deliver) to c's; a worker keeps those of an existing consumer (and
// creates it with c's when there is none).
func open(ctx context.Context, nc *nats.Conn, c Config, update bool) (*resources, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	r := &resources{js: js}
	r.stream, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: JobStream, Subjects: []string{JobSubject}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: stream %s (is JetStream enabled on the server?): %w", JobStream, err)
	}
	cc := jetstream.ConsumerConfig{Durable: WorkerConsumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: c.AckWait, MaxDeliver: c.MaxDeliver}
	if update {
		r.consumer, err = r.stream.CreateOrUpdateConsumer(ctx, cc)
	} else if r.consumer, err = r.stream.Consumer(ctx, WorkerConsumer); errors.Is(err, jetstream.ErrConsumerNotFound) {
		r.consumer, err = r.stream.CreateConsumer(ctx, cc)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: consumer %s: %w", WorkerConsumer, err)
	}
	r.results, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: ResultBucket, TTL: c.ResultTTL, Storage: jetstream.FileStorage})
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %s: %w", ResultBucket, err)
	}
	r.artifacts, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: ArtifactBucket, Storage: jetstream.FileStorage})
	if err != nil {
		return nil, fmt.Errorf("cluster: object store %s: %w", ArtifactBucket, err)
	}
	return r, nil
}

// putArtifact stores data under its sha256 (once) and returns the hash.
func (r *resources) putArtifact(ctx context.Context, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	if _, err := r.artifacts.GetInfo(ctx, h); err == nil {
		return h, nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return "", fmt.Errorf("cluster: artifact %s: %w", h, err)
	}
	if _, err := r.artifacts.PutBytes(ctx, h, data); err != nil {
		return "", fmt.Errorf("cluster: storing artifact %s: %w", h, err)
	}
	return h, nil
}

// getArtifact fetches the artifact of hash h and checks its content.
func (r *resources) getArtifact(ctx context.Context, h string) ([]byte, error) {
	data, err := r.artifacts.GetBytes(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("cluster: fetching artifact %s: %w", h, err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != h {
		return nil, fmt.Errorf("cluster: artifact %s: content does not match its hash", h)
	}
	return data, nil
}

// Job is the message of one episode job.
type Job struct {
	// Run identifies the trainer's run; Iteration (1-based) and Batch (the
	// trainer's Sample/Replay call, counted from 1) the call; Index the
	// job's place in it.
	Run       string `json:"run"`
	Iteration int    `json:"iteration"`
	Batch     int    `json:"batch"`
	Index     int    `json:"index"`
	// Task and Rollout are the seeds; Prefix the forced decisions of a
	// branch (Replay), nil for a sampled episode.
	Task    uint64  `json:"task"`
	Rollout uint64  `json:"rollout"`
	Prefix  [][]int `json:"prefix,omitempty"`
	// Replay is true for a branch of counterfactual credit.
	Replay bool `json:"replay,omitempty"`
	// Eval, if set, makes the job an evaluation episode played by the
	// policy of that name ("grpo", "random" or a baseline of the env; see
	// rollout.Pool.PlayEval), the trained one greedy unless Sampled.
	// Evaluation jobs have Iteration 0.
	Eval    string `json:"eval,omitempty"`
	Sampled bool   `json:"sampled,omitempty"`
	// Policy and Config are the sha256 of the policy weights
	// (safetensors) and of the resolved configuration in the object store;
	// Policy is empty for an evaluation without a trained policy.
	Policy string `json:"policy"`
	Config string `json:"config"`
	// The trainer's [Config] settings a worker plays the job with:
	// Progress (progress_every in force), MaxDeliver, RateLimitPause and
	// MaxRateLimited.
	Progress       time.Duration `json:"progress"`
	MaxDeliver     int           `json:"max_deliver"`
	RateLimitPause time.Duration `json:"rate_limit_pause"`
	MaxRateLimited int           `json:"max_rate_limited"`
	// RateLimited counts the times the job was handed back because its
	// episode was rate-limited by the LLM.
	RateLimited int `json:"rate_limited,omitempty"`
}

// Key is the result key of the job: run.iteration.batch.index.
func (j Job) Key() string { return fmt.Sprintf("%s.%d.%d.%d", j.Run, j.Iteration, j.Batch, j.Index) }

// envelope is a result as stored in the bucket: the job it answers and
// the episode's result. Gob keeps every float64 bit (NaN included).
type envelope struct {
	Run       string
	Iteration int
	Batch     int
	Index     int
	Result    rollout.EpisodeResult
}

func encodeResult(j Job, res rollout.EpisodeResult) ([]byte, error) {
	var b bytes.Buffer
	e := envelope{Run: j.Run, Iteration: j.Iteration, Batch: j.Batch, Index: j.Index, Result: res}
	if err := gob.NewEncoder(&b).Encode(&e); err != nil {
		return nil, fmt.Errorf("cluster: encoding the result of %s: %w", j.Key(), err)
	}
	return b.Bytes(), nil
}

func decodeResult(data []byte) (envelope, error) {
	var e envelope
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&e); err != nil {
		return e, err
	}
	// Gob drops empty maps; scoring always leaves them made.
	if e.Result.Components == nil {
		e.Result.Components = map[string]float64{}
	}
	if e.Result.Metrics == nil {
		e.Result.Metrics = map[string]float64{}
	}
	return e, nil
}
